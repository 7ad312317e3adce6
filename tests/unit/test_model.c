/* test_model.c: the cost model's arithmetic (spersist/sp-model.h) and the schedulability test. */
#include "unit.h"

#include "sp-model.h"

#define US 1000ull

static const SpModelCosts costs = {
	.mark_ns = 2000, .objects_ns = 3000, .piece_ns = 4000, .forget_ns = 1000,
	.slice_ns = 20000, .slice_bytes = 65536, .wake_ns = 20000,
	.use_permille = 0, .pause_ns = 500000, .period_ns = 3000000,
};

/* Work from the units the state needs, periods from the server's share (pause less wake-up), the cycle from both. */
static void
test_prediction_by_hand (void **state)
{
	(void)state;
	SpModelState s = { .objects = 8000, .marks = 1000, .writes = 1000, .pieces = 10, .forgets = 5, .bytes = 1u << 20 };
	SpModelPrediction p;
	sp_model_predict (&s, &costs, &p);
	/* SP: 1000 * 2000 + 1000 * 3000 + 10 * 4000 + 5 * 1000; writer: 16 slices * 20000. */
	assert_int_equal (p.work_ns, 5045000 + 320000);
	assert_int_equal (p.periods, 12);                     /* ceil (5365000 / 480000) */
	assert_int_equal (p.cycle_ns, 11 * 3000000 + (5365000 - 11 * 480000));
	assert_int_equal (p.bytes, 1u << 20);
	assert_true (sp_model_schedulable (&p, 40000000));
	assert_false (sp_model_schedulable (&p, 30000000));
}

/* A commit that shares a period is work; one longer than half the pause (an fsync) takes a period of its own. */
static void
test_commit_shares_a_period_or_has_its_own (void **state)
{
	(void)state;
	SpModelState s = { .objects = 8000, .marks = 1000, .writes = 1000, .pieces = 10, .forgets = 5, .bytes = 1u << 20 };
	SpModelCosts c = costs;
	SpModelPrediction p;
	c.commit_ns = 40000;                                   /* a rename on tmpfs */
	sp_model_predict (&s, &c, &p);
	assert_int_equal (p.work_ns, 5365000 + 40000);
	assert_int_equal (p.periods, 12);                      /* ceil (5405000 / 480000) */
	assert_int_equal (p.cycle_ns, 11 * 3000000 + (5405000 - 11 * 480000));
	c.commit_ns = 1000000;                                 /* an fsync to disk: after the SP task's last period */
	sp_model_predict (&s, &c, &p);
	assert_int_equal (p.work_ns, 5365000);
	assert_int_equal (p.periods, 13);
	assert_int_equal (p.cycle_ns, 12 * 3000000 + 1000000);
	c.commit_ns = 250000;                                  /* exactly half the pause still shares */
	sp_model_predict (&s, &c, &p);
	assert_int_equal (p.periods, 12);
}

/* A store with a writeback step: one per whole interval of bytes, none for the rest (finish does it). */
static void
test_writeback_steps (void **state)
{
	(void)state;
	SpModelState s = { .objects = 8000, .marks = 1000, .writes = 1000, .pieces = 10, .forgets = 5, .bytes = (1u << 20) + 1000 };
	SpModelCosts c = costs;
	SpModelPrediction plain, with;
	sp_model_predict (&s, &c, &plain);
	c.writeback_ns = 120000;
	c.writeback_bytes = 512u << 10;
	sp_model_predict (&s, &c, &with);
	assert_int_equal (with.work_ns, plain.work_ns + 2 * 120000);
	c.writeback_bytes = 0;                                 /* none: no steps */
	sp_model_predict (&s, &c, &with);
	assert_int_equal (with.work_ns, plain.work_ns);
}

/* A state that fits one increment: one period, the cycle as long as its work. */
static void
test_small_state_one_period (void **state)
{
	(void)state;
	SpModelState s;
	sp_model_state_estimate (&s, 10, 300, true);
	assert_int_equal (s.marks, 2);
	assert_int_equal (s.writes, 2);
	assert_int_equal (s.forgets, 1);
	SpModelPrediction p;
	sp_model_predict (&s, &costs, &p);
	assert_int_equal (p.periods, 1);
	assert_int_equal (p.cycle_ns, p.work_ns);
	assert_int_equal (p.work_ns, 2 * 5000 + 1000 + 20000);
	/* A cycle of one pass (--sp-passes=1) does not mark: no marking units, the rest the same. */
	SpModelState one;
	sp_model_state_estimate (&one, 10, 300, false);
	assert_int_equal (one.marks, 0);
	assert_int_equal (one.writes, s.writes);
	assert_int_equal (one.forgets, s.forgets);
	sp_model_predict (&one, &costs, &p);
	assert_int_equal (p.work_ns, 2 * 3000 + 1000 + 20000);
}

/*
 * A budget that would write the state in one period, but 33 MiB through
 * buffers of 1 MiB: after the first period (two buffers) a period hands the
 * writer one, 32 periods in all.  Buffers that hold the state, or a writer
 * outside the budget (buffer_bytes 0), leave the prediction to the budget.
 */
static void
test_buffers_bound_the_periods (void **state)
{
	(void)state;
	SpModelCosts big = costs;
	big.pause_ns = 500000 * US;
	big.period_ns = 1000000 * US;
	big.buffer_bytes = 1u << 20;
	SpModelState s = { .objects = 1000000, .writes = 31250, .forgets = 100, .bytes = 33u << 20 };
	SpModelPrediction p;
	sp_model_predict (&s, &big, &p);
	assert_int_equal (p.work_ns, 31250 * 3000 + 100 * 1000 + (33 * 16) * 20000);
	assert_int_equal (p.periods, 32);
	assert_int_equal (p.cycle_ns, 31 * big.period_ns + p.work_ns / 32);
	assert_false (sp_model_schedulable (&p, 30 * big.period_ns));
	uint64_t work = p.work_ns;
	big.buffer_bytes = 64u << 20;
	sp_model_predict (&s, &big, &p);
	assert_int_equal (p.periods, 1);
	assert_int_equal (p.cycle_ns, work);
	big.buffer_bytes = 0;
	sp_model_predict (&s, &big, &p);
	assert_int_equal (p.periods, 1);
	/* Where the budget bounds it more, the buffers change nothing. */
	SpModelCosts small = costs;
	small.buffer_bytes = 1u << 20;
	SpModelPrediction without;
	sp_model_predict (&s, &costs, &without);
	sp_model_predict (&s, &small, &p);
	assert_true (without.periods > 32);
	assert_int_equal (p.periods, without.periods);
	assert_int_equal (p.cycle_ns, without.cycle_ns);
}

/* The cycle grows with the state and shrinks with the budget; a budget below the wake-up still predicts. */
static void
test_monotone_in_state_and_budget (void **state)
{
	(void)state;
	SpModelPrediction small, large, more_budget, tiny_budget;
	SpModelState s;
	sp_model_state_estimate (&s, 100000, 40u << 20, true);
	sp_model_predict (&s, &costs, &small);
	sp_model_state_estimate (&s, 1000000, 40u << 20, true);
	sp_model_predict (&s, &costs, &large);
	assert_true (large.cycle_ns > small.cycle_ns && large.periods > small.periods);
	SpModelCosts c = costs;
	c.pause_ns *= 2;
	sp_model_predict (&s, &c, &more_budget);
	assert_true (more_budget.cycle_ns < large.cycle_ns);
	c.pause_ns = c.wake_ns / 2;
	sp_model_predict (&s, &c, &tiny_budget);
	assert_true (tiny_budget.periods >= large.work_ns);   /* 1 ns a period: one period a nanosecond of work */
}

/* The budget's use: learned from a cycle's work and length; a server that uses half needs twice the periods. */
static void
test_use_of_the_budget (void **state)
{
	(void)state;
	/* 12 periods' worth of full shares (480 us each) in a cycle of 12 periods: all of it. */
	assert_int_equal (sp_model_use_permille (&costs, 12 * 480000, 11 * 3000000 + 1), 1000);
	/* About half of it: 6 shares over 11.5 periods (the last one counts half). */
	assert_int_equal (sp_model_use_permille (&costs, 6 * 480000, 11 * 3000000 + 1), 521);
	/* Never more than all, never nothing; a cycle of one period says nothing of u. */
	assert_int_equal (sp_model_use_permille (&costs, 100 * 480000, 6000000), 1000);
	assert_int_equal (sp_model_use_permille (&costs, 0, 6000000), 1);
	assert_int_equal (sp_model_use_permille (&costs, 0, 3000000), 1000);
	SpModelCosts half = costs;
	half.use_permille = 500;
	SpModelState s = { .objects = 8000, .marks = 1000, .writes = 1000, .pieces = 10, .forgets = 5, .bytes = 1u << 20 };
	SpModelPrediction full, slow;
	sp_model_predict (&s, &costs, &full);
	sp_model_predict (&s, &half, &slow);
	assert_int_equal (sp_model_share (&half), 240000);
	assert_int_equal (slow.periods, 23);                  /* ceil (5365000 / 240000) */
	assert_true (slow.cycle_ns > full.cycle_ns);
	/* Work that fits one whole share is one period, whatever u says of longer cycles. */
	SpModelState small = { .objects = 400, .marks = 50, .writes = 50, .bytes = 3000 };   /* 270 us of work */
	sp_model_predict (&small, &half, &slow);
	assert_int_equal (slow.periods, 1);
	assert_int_equal (slow.cycle_ns, slow.work_ns);
	assert_true (slow.work_ns > sp_model_share (&half) && slow.work_ns <= sp_model_share (&costs));
}

/* k: a cycle whose work was twice what its units' costs add up to makes the next prediction's work twice. */
static void
test_work_over_units (void **state)
{
	(void)state;
	SpModelState s = { .objects = 8000, .marks = 1000, .writes = 1000, .pieces = 10, .forgets = 5, .bytes = 1u << 20 };
	SpModelPrediction plain, doubled;
	sp_model_predict (&s, &costs, &plain);
	uint64_t k = sp_model_work_permille (&s, &costs, 2 * plain.work_ns);
	assert_int_equal (k, 2000);
	SpModelCosts c = costs;
	c.work_permille = k;
	sp_model_predict (&s, &c, &doubled);
	assert_int_equal (doubled.work_ns, 2 * plain.work_ns);
	assert_int_equal (sp_model_work_permille (&s, &costs, plain.work_ns / 10), 500);   /* bounded */
}

/* Learning: k from every cycle; u only from a cycle whose work needed more than one period's whole share. */
static void
test_learning_ignores_stalled_short_cycles (void **state)
{
	(void)state;
	SpModelState small = { .objects = 400, .marks = 50, .writes = 50, .bytes = 3000 };   /* 270 us of work */
	SpModelLearned l = { 0 };
	/* 270 us of work, stalled past the period (the program took the CPU): k learned, u not. */
	sp_model_learn (&l, &small, &costs, 270000, 2 * 3000000 + 5000, 0);
	assert_int_equal (l.cycles, 1);
	assert_int_equal (l.work_permille, 1000);
	assert_int_equal (l.use_permille, 0);
	SpModelCosts c = costs;
	c.work_permille = l.work_permille;
	c.use_permille = l.use_permille;
	SpModelPrediction p;
	sp_model_predict (&small, &c, &p);
	assert_int_equal (p.periods, 1);                      /* still one period */
	/* A cycle of 12 full shares of work over 23 periods: the server used about half its budget. */
	SpModelState s = { .objects = 8000, .marks = 1000, .writes = 1000, .pieces = 10, .forgets = 5, .bytes = 1u << 20 };
	sp_model_learn (&l, &s, &costs, 12 * 480000, 22 * 3000000 + 1, 0);
	assert_int_equal (l.cycles, 2);
	assert_int_equal (l.use_permille, 533);               /* 12 / 22.5: the last period half used */
	/* The next such cycle moves u a quarter of the way. */
	sp_model_learn (&l, &s, &costs, 12 * 480000, 11 * 3000000 + 1, 0);
	assert_int_equal (l.use_permille, (3 * 533 + 1000) / 4);
	assert_true (l.cycles >= SP_MODEL_CALIBRATION_CYCLES);
}

/*
 * u is learned from the periods the work spread over, not from the wait for
 * the first release nor a commit that runs alone, which a prediction adds
 * apart: a cycle of 12 shares of work in 12 periods, after a 2.5 ms wait and
 * before a 0.9 ms commit alone, used the whole budget, and the next such
 * cycle is predicted at its length.
 */
static void
test_learning_leaves_out_what_prediction_adds (void **state)
{
	(void)state;
	SpModelCosts c = costs;
	c.commit_ns = 900000;            /* over half the pause: alone */
	SpModelState s = { .objects = 8000, .marks = 1000, .writes = 1000, .pieces = 10, .forgets = 5, .bytes = 1u << 20 };
	SpModelPrediction p;
	sp_model_predict (&s, &c, &p);
	uint64_t work = p.work_ns, periods = p.periods - 1;     /* the work's periods, the commit's apart */
	uint64_t cycle = 2500000 + periods * c.period_ns + c.commit_ns;
	SpModelLearned l = { 0 };
	sp_model_learn (&l, &s, &c, work, cycle + 40000, 2500000);   /* the commit 40 us after its release */
	c.use_permille = l.use_permille;
	sp_model_predict (&s, &c, &p);
	assert_int_equal (p.cycle_ns + 2500000, cycle);
	/* Learned from the whole cycle, u counts the wait and the commit as budget left unused: a period too many. */
	SpModelLearned whole = { 0 };
	sp_model_learn (&whole, &s, &c, work, cycle + 40000, 0);
	assert_true (whole.use_permille < l.use_permille);
	c.use_permille = whole.use_permille;
	sp_model_predict (&s, &c, &p);
	assert_int_equal (p.cycle_ns + 2500000, cycle + c.period_ns);
}

/*
 * L: what a cycle that fit one period took beyond its work (the wake-ups and
 * the hand-off to the writer) is learned and added to every prediction; a
 * cycle stalled past its period teaches nothing, a sample is a pause at most.
 */
static void
test_latency_learned_from_one_period_cycles (void **state)
{
	(void)state;
	SpModelState small = { .objects = 400, .marks = 50, .writes = 50, .bytes = 3000 };   /* 270 us of work */
	SpModelPrediction p;
	sp_model_predict (&small, &costs, &p);
	assert_int_equal (p.cycle_ns, p.work_ns);
	SpModelLearned l = { 0 };
	sp_model_learn (&l, &small, &costs, p.work_ns, 2500000 + p.work_ns + 80 * US, 2500000);
	assert_int_equal (l.latency_ns, 80 * US);
	SpModelCosts c = costs;
	c.latency_ns = l.latency_ns;
	SpModelPrediction again;
	sp_model_predict (&small, &c, &again);
	assert_int_equal (again.cycle_ns, p.work_ns + 80 * US);
	sp_model_learn (&l, &small, &costs, p.work_ns, 2 * costs.period_ns, 0);     /* stalled: not learned */
	assert_int_equal (l.latency_ns, 80 * US);
	sp_model_learn (&l, &small, &costs, p.work_ns, p.work_ns + 2 * costs.pause_ns, 0);   /* counts as a pause */
	assert_int_equal (l.latency_ns, (7 * 80 * US + costs.pause_ns) / 8);
	/* Every prediction ends with it, a cycle of many periods too. */
	SpModelState s = { .objects = 8000, .marks = 1000, .writes = 1000, .pieces = 10, .forgets = 5, .bytes = 1u << 20 };
	sp_model_predict (&s, &costs, &p);
	sp_model_predict (&s, &c, &again);
	assert_int_equal (again.cycle_ns, p.cycle_ns + 80 * US);
	assert_int_equal (again.periods, p.periods);
}

/* Learned from a cycle, u predicts that cycle's periods again, whatever its last period held. */
static void
test_learned_use_reproduces_the_periods (void **state)
{
	(void)state;
	SpModelState s = { .objects = 8000, .marks = 1000, .writes = 1000, .pieces = 10, .forgets = 5, .bytes = 1u << 20 };
	SpModelPrediction p;
	sp_model_predict (&s, &costs, &p);              /* 5,365 us of work: 12 periods, the last one 85 us */
	for (uint64_t periods = 12; periods <= 30; periods++) {
		for (uint64_t last = 10000; last < costs.period_ns; last += 290000) {
			SpModelLearned l = { 0 };
			uint64_t cycle = (periods - 1) * costs.period_ns + last;
			sp_model_learn (&l, &s, &costs, p.work_ns, cycle, 0);
			SpModelCosts c = costs;
			c.use_permille = l.use_permille;
			SpModelPrediction again;
			sp_model_predict (&s, &c, &again);
			assert_int_equal (again.periods, periods);
		}
	}
}

/*
 * The typical interval: a 1 kHz loop's calls, then a catch-up after a stall
 * (calls 5 us apart): the median stays a millisecond through a burst of 7,
 * and follows a program that changes its rate.
 */
static void
test_typical_interval_outlasts_a_burst (void **state)
{
	(void)state;
	SpModelIntervals iv = { 0 };
	assert_int_equal (sp_model_interval_add (&iv, 1000 * US), 1000 * US);
	for (int i = 0; i < 20; i++)
		sp_model_interval_add (&iv, 1000 * US + (uint64_t)(i % 3) * US);
	for (int i = 0; i < 7; i++)
		assert_true (sp_model_interval_add (&iv, 5 * US) >= 1000 * US);
	for (int i = 0; i < SP_MODEL_INTERVALS; i++)
		sp_model_interval_add (&iv, 200 * US);
	assert_int_equal (sp_model_interval_add (&iv, 200 * US), 200 * US);
	/* A prediction of 0.5 ms judged by the longer of the two: a burst's call is not late, a rate of 0.2 ms is. */
	SpModelPrediction p = { .cycle_ns = 500 * US };
	assert_true (sp_model_schedulable (&p, 1000 * US));       /* MAX (5 us, typical 1 ms) */
	assert_false (sp_model_schedulable (&p, 200 * US));
}

/* The verdict: a block of calls a quarter late is unschedulable; a late call now and then is not. */
static void
test_verdict_needs_a_quarter_of_a_block (void **state)
{
	(void)state;
	SpModelVerdict v = { 0 };
	/* One late call in every 16 (a stalled cycle now and then): never a verdict. */
	for (int i = 0; i < 50 * SP_MODEL_VERDICT_CALLS; i++)
		assert_int_equal (sp_model_verdict_add (&v, i % 16 == 5), 0);
	/* Late calls piling up in one block (a cycle two intervals long: every other call). */
	uint32_t said = 0;
	for (int i = 0; i < SP_MODEL_VERDICT_CALLS; i++) {
		assert_int_equal (said, 0);
		said = sp_model_verdict_add (&v, i % 2 == 1);
	}
	assert_int_equal (said, SP_MODEL_VERDICT_CALLS / 2);
	/* A quarter exactly is enough, one fewer is not. */
	for (int i = 0; i < SP_MODEL_VERDICT_CALLS; i++)
		said = sp_model_verdict_add (&v, i < SP_MODEL_VERDICT_CALLS / 4);
	assert_int_equal (said, SP_MODEL_VERDICT_CALLS / 4);
	for (int i = 0; i < SP_MODEL_VERDICT_CALLS; i++)
		said = sp_model_verdict_add (&v, i < SP_MODEL_VERDICT_CALLS / 4 - 1);
	assert_int_equal (said, 0);
}

/* Starved: a cycle long enough to judge that had less than an eighth of its periods' budget. */
static void
test_starved_cycle (void **state)
{
	(void)state;
	const uint64_t period = 3000000, pause = 500000;
	uint64_t judged = SP_MODEL_STARVED_PERIODS * period;
	/* Too soon to say, whatever the work: a cold first cycle may start slowly. */
	assert_false (sp_model_starved (judged - 1, 0, period, pause));
	/* Long enough: nothing done is starved, its budget used is not. */
	assert_true (sp_model_starved (judged, 0, period, pause));
	assert_false (sp_model_starved (judged, SP_MODEL_STARVED_PERIODS * pause, period, pause));
	/* The line is an eighth of the budget of the periods elapsed (a cycle of 10 s, 3,333 periods). */
	uint64_t running = 10 * 1000000000ull, budget = running / period * pause;
	assert_true (sp_model_starved (running, budget / SP_MODEL_STARVED_SHARE - 1, period, pause));
	assert_false (sp_model_starved (running, budget / SP_MODEL_STARVED_SHARE, period, pause));
	/* No period, no judgement. */
	assert_false (sp_model_starved (running, 0, 0, pause));
}

/* Releases (times in us for reading; ns in the calls): period 1000, target 200, window 250. */
static void
test_next_release_skips_after_an_overrun (void **state)
{
	(void)state;
	/* Runs within the window: the next period, on the schedule. */
	assert_int_equal (sp_model_next_release (10000 * US, 10250 * US, 10240 * US, 1000 * US, 200 * US), 11000 * US);
	/* A run stalled until 15,500: not the missed releases at once, but 800 after the stall. */
	assert_int_equal (sp_model_next_release (10000 * US, 10250 * US, 15500 * US, 1000 * US, 200 * US), 16300 * US);
	/* A small overrun: the schedule still holds where it leaves 800 of rest. */
	assert_int_equal (sp_model_next_release (10000 * US, 10250 * US, 10260 * US, 1000 * US, 200 * US), 11060 * US);
	assert_int_equal (sp_model_next_release (10000 * US, 10250 * US, 10190 * US, 1000 * US, 200 * US), 11000 * US);
}

static void
test_first_release_follows_the_calls (void **state)
{
	(void)state;
	assert_int_equal (sp_model_first_release (0, 0, 0, 0, 1000 * US, 200 * US), 0);   /* nothing before: at once */
	/* The last period's run ended 120 after its release: the next may come 920 after it, not 1000. */
	assert_int_equal (sp_model_first_release (10000 * US, 10250 * US, 10120 * US, 0, 1000 * US, 200 * US), 10920 * US);
	/* Runs late within the window (a writer's slices): never later than a period after the last release. */
	assert_int_equal (sp_model_first_release (10000 * US, 10250 * US, 10240 * US, 0, 1000 * US, 200 * US), 11000 * US);
	/* A run past the window (a commit alone in its period): the rest after it, later than a period. */
	assert_int_equal (sp_model_first_release (10000 * US, 10250 * US, 10900 * US, 0, 1000 * US, 200 * US), 11700 * US);
	/* A target as long as the period: no rest to keep. */
	assert_int_equal (sp_model_first_release (10000 * US, 11050 * US, 10500 * US, 0, 1000 * US, 1000 * US), 10500 * US);
	/* A start stopped the program 60 since: the release comes 60 later, whichever rule placed it. */
	assert_int_equal (sp_model_first_release (10000 * US, 10250 * US, 10120 * US, 60 * US, 1000 * US, 200 * US), 10980 * US);
	assert_int_equal (sp_model_first_release (10000 * US, 10250 * US, 10240 * US, 60 * US, 1000 * US, 200 * US), 11060 * US);
	assert_int_equal (sp_model_first_release (10000 * US, 10250 * US, 10900 * US, 60 * US, 1000 * US, 200 * US), 11760 * US);
	/* Nothing before: at once, stop or not (no period's runs to share a stretch with). */
	assert_int_equal (sp_model_first_release (0, 0, 0, 60 * US, 1000 * US, 200 * US), 0);
}

static void
test_resume_step_ends_within_the_window (void **state)
{
	(void)state;
	/* Doubling steps well inside the window: as asked. */
	assert_int_equal (sp_model_resume_wake (1000 * US, 50 * US, 150000 * US, 50 * US, 10 * US), 1050 * US);
	/* A step that would end past the last useful instant (deadline less a run) ends there: 102 ms from 103 ms, window ending at 150 ms. */
	assert_int_equal (sp_model_resume_wake (103000 * US, 102400 * US, 150000 * US, 50 * US, 10 * US), 149990 * US);
	/* Not even the shortest step and a run fit: give up. */
	assert_int_equal (sp_model_resume_wake (149950 * US, 102400 * US, 150000 * US, 50 * US, 10 * US), 0);
	/* Exactly the shortest step and a run: the step. */
	assert_int_equal (sp_model_resume_wake (149940 * US, 100 * US, 150000 * US, 50 * US, 10 * US), 149990 * US);
}

static void
test_duration_high_estimate_holds_after_a_stall (void **state)
{
	(void)state;
	SpModelDuration d = { 0, 0 };
	for (int i = 0; i < 64; i++)
		sp_model_duration_add (&d, 25 * US);
	/* A steady kind of run: both estimates are what it takes. */
	assert_in_range (d.avg_ns, 24 * US, 25 * US);
	assert_in_range (d.high_ns, d.avg_ns, 25 * US);
	/* One stall: the high estimate takes it at once; the average barely moves. */
	sp_model_duration_add (&d, 200 * US);
	assert_int_equal (d.high_ns, 200 * US);
	assert_true (d.avg_ns < 50 * US);
	/* It holds well above the usual run for the next tens of runs... */
	for (int i = 0; i < 20; i++)
		sp_model_duration_add (&d, 25 * US);
	assert_true (d.high_ns > 100 * US);
	/* ...and comes back to the steady state's when no other stall comes. */
	for (int i = 0; i < 300; i++)
		sp_model_duration_add (&d, 25 * US);
	assert_true (d.high_ns < 27 * US);
	/* Never below the average, even when runs shorten. */
	for (int i = 0; i < 8; i++)
		sp_model_duration_add (&d, 5 * US);
	assert_true (d.high_ns >= d.avg_ns);
}

/* The wake-up's latency is counted from when the server was due: times in us. */
static void
test_due_is_the_release_or_the_call (void **state)
{
	(void)state;
	/* Slept from 100 until its release at 1,000, woke at 1,030: due at the release. */
	assert_int_equal (sp_model_due (100 * US, 1000 * US, 0, 0, 1030 * US, 1000 * US), 1000 * US);
	/* Called at 400 during that sleep: due at the call. */
	assert_int_equal (sp_model_due (100 * US, 1000 * US, 400 * US, 0, 430 * US, 1000 * US), 400 * US);
	/* A call before the sleep began does not count (it was not what woke it). */
	assert_int_equal (sp_model_due (100 * US, 1000 * US, 50 * US, 0, 1020 * US, 1000 * US), 1000 * US);
	/* A call after the release does not either. */
	assert_int_equal (sp_model_due (100 * US, 1000 * US, 1010 * US, 0, 1020 * US, 1000 * US), 1000 * US);
	/* No release (an idle wait), woken by a call at 500: due then; no call: now. */
	assert_int_equal (sp_model_due (100 * US, UINT64_MAX, 500 * US, 0, 520 * US, 1000 * US), 500 * US);
	assert_int_equal (sp_model_due (100 * US, UINT64_MAX, 0, 0, 520 * US, 1000 * US), 520 * US);
	/* A release already past when the sleep began (a late run): no latency is counted. */
	assert_int_equal (sp_model_due (100 * US, 80 * US, 0, 0, 110 * US, 1000 * US), 110 * US);
	/* A clock read before the release (a spurious early return): never after now. */
	assert_int_equal (sp_model_due (100 * US, 1000 * US, 0, 0, 990 * US, 1000 * US), 990 * US);
	/* A latency longer than a switch is charged as a switch: woke 185 us after a call at 400, switches of 60 at most. */
	assert_int_equal (sp_model_due (100 * US, 1000 * US, 400 * US, 0, 585 * US, 60 * US), 525 * US);
	assert_int_equal (sp_model_due (100 * US, 1000 * US, 400 * US, 0, 450 * US, 60 * US), 400 * US);
	/* Woken at its release, 1,000, and on the run queue 70 of the 80 us until it ran (a loop that
	 * outranks it): only the last 10 count.  Queued longer than the latency (it waited before the
	 * release too, preempted before it slept): none. */
	assert_int_equal (sp_model_due (100 * US, 1000 * US, 0, 70 * US, 1080 * US, 60 * US), 1070 * US);
	assert_int_equal (sp_model_due (100 * US, 1000 * US, 0, 95 * US, 1080 * US, 60 * US), 1080 * US);
	/* The queue's time first, then the switch's cap: 200 us late, 100 of them queued: 60 count. */
	assert_int_equal (sp_model_due (100 * US, 1000 * US, 0, 100 * US, 1200 * US, 60 * US), 1140 * US);
}

/*
 * A wake-up held by something else (a collection of 1,000,000 objects stopped
 * the world for 50 ms while a period was released): the average moves by a
 * sixteenth of the budget, not of the 50 ms.  Uncapped, the average passed
 * the 500 us budget and the next prediction was 87,051,231 periods.
 */
static void
test_wake_average_caps_a_held_wake_up (void **state)
{
	(void)state;
	uint64_t avg = 20 * US;
	sp_model_wake_add (&avg, 50000 * US, 500 * US);
	assert_int_equal (avg, 20 * US + (500 - 20) * US / 16);
	SpModelCosts c = costs;
	c.wake_ns = avg;
	SpModelState s;
	SpModelPrediction p, usual;
	sp_model_state_estimate (&s, 1000000, 32u << 20, true);
	sp_model_predict (&s, &c, &p);
	sp_model_predict (&s, &costs, &usual);
	assert_true (p.periods < 2 * usual.periods);
	/* Ordinary samples are averaged as they are. */
	avg = 20 * US;
	sp_model_wake_add (&avg, 36 * US, 500 * US);
	assert_int_equal (avg, 21 * US);
}

int
main (void)
{
	const struct CMUnitTest tests [] = {
		cmocka_unit_test (test_prediction_by_hand),
		cmocka_unit_test (test_buffers_bound_the_periods),
		cmocka_unit_test (test_commit_shares_a_period_or_has_its_own),
		cmocka_unit_test (test_writeback_steps),
		cmocka_unit_test (test_small_state_one_period),
		cmocka_unit_test (test_latency_learned_from_one_period_cycles),
		cmocka_unit_test (test_monotone_in_state_and_budget),
		cmocka_unit_test (test_use_of_the_budget),
		cmocka_unit_test (test_work_over_units),
		cmocka_unit_test (test_learning_ignores_stalled_short_cycles),
		cmocka_unit_test (test_learning_leaves_out_what_prediction_adds),
		cmocka_unit_test (test_learned_use_reproduces_the_periods),
		cmocka_unit_test (test_verdict_needs_a_quarter_of_a_block),
		cmocka_unit_test (test_starved_cycle),
		cmocka_unit_test (test_typical_interval_outlasts_a_burst),
		cmocka_unit_test (test_next_release_skips_after_an_overrun),
		cmocka_unit_test (test_first_release_follows_the_calls),
		cmocka_unit_test (test_resume_step_ends_within_the_window),
		cmocka_unit_test (test_duration_high_estimate_holds_after_a_stall),
		cmocka_unit_test (test_due_is_the_release_or_the_call),
		cmocka_unit_test (test_wake_average_caps_a_held_wake_up),
	};
	return cmocka_run_group_tests (tests, NULL, NULL);
}
