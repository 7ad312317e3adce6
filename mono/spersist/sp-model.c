/* sp-model.c: see sp-model.h. */
#include "sp-model.h"

static uint64_t
sp_model_div_up (uint64_t a, uint64_t b)
{
	return b ? (a + b - 1) / b : 0;
}

/* Bookkeeping forgotten at the end of a cycle, bytes an object: state, map slots at half load, LID table, children. */
#define SP_MODEL_BOOKKEEPING 45
#define SP_MODEL_FORGET_STEP (64u << 10)

void
sp_model_state_estimate (SpModelState *state, uint64_t objects, uint64_t bytes, bool marks)
{
	*state = (SpModelState){
		.objects = objects, .marks = marks ? sp_model_div_up (objects, 8) : 0, .writes = sp_model_div_up (objects, 8),
		.forgets = sp_model_div_up (objects * SP_MODEL_BOOKKEEPING, SP_MODEL_FORGET_STEP), .bytes = bytes,
	};
}

uint64_t
sp_model_share (const SpModelCosts *costs)
{
	uint64_t rest = costs->pause_ns > costs->wake_ns ? costs->pause_ns - costs->wake_ns : 1;
	uint64_t use = costs->use_permille ? costs->use_permille : 1000;
	uint64_t share = rest * use / 1000;
	return share ? share : 1;
}

uint64_t
sp_model_use_permille (const SpModelCosts *costs, uint64_t work_ns, uint64_t cycle_ns)
{
	SpModelCosts full = *costs;
	full.use_permille = 1000;
	uint64_t periods = sp_model_div_up (cycle_ns, costs->period_ns);
	if (periods < 2)
		return 1000;
	/*
	 * The share that spreads the work over as many periods as it took, the
	 * last one half used: counted as a whole, every cycle with a last period
	 * partly used lowered u, and the prediction then needed a period more
	 * than the cycle had (session 28).
	 */
	uint64_t use = work_ns * 2000 / ((2 * periods - 1) * sp_model_share (&full));
	return use < 1 ? 1 : use > 1000 ? 1000 : use;
}

uint64_t
sp_model_work_permille (const SpModelState *units, const SpModelCosts *costs, uint64_t work_ns)
{
	SpModelCosts plain = *costs;
	SpModelPrediction p;
	plain.work_permille = 1000;
	sp_model_predict (units, &plain, &p);
	uint64_t k = p.work_ns ? work_ns * 1000 / p.work_ns : 1000;
	return k < 500 ? 500 : k > 5000 ? 5000 : k;
}

/* True when the writer's commit runs alone, in a period of its own after the work's (sp-cycle.c). */
static bool
sp_model_commit_alone (const SpModelCosts *costs)
{
	return costs->commit_ns > costs->pause_ns / 2;
}

/*
 * The periods the chunk buffers allow the state's bytes at least (sp-model.h):
 * a period hands the writer one buffer (the first, two).  Measured before this
 * bound: 1,000,000 nodes (33 MiB) with 1 MiB buffers, --sp-pause=500000
 * --sp-period=1000000, predicted in one period and written in 33 (32.9 s;
 * predicted with it: 32.4 s).
 */
static uint64_t
sp_model_periods_by_buffers (const SpModelState *state, const SpModelCosts *costs)
{
	if (!costs->buffer_bytes || state->bytes <= 2 * costs->buffer_bytes)
		return 1;
	return sp_model_div_up (state->bytes, costs->buffer_bytes) - 1;
}

void
sp_model_predict (const SpModelState *state, const SpModelCosts *costs, SpModelPrediction *out)
{
	uint64_t sp = state->marks * costs->mark_ns + state->writes * costs->objects_ns + state->pieces * costs->piece_ns +
		state->forgets * costs->forget_ns;
	uint64_t writer = sp_model_div_up (state->bytes, costs->slice_bytes) * costs->slice_ns;
	if (costs->writeback_bytes)
		writer += state->bytes / costs->writeback_bytes * costs->writeback_ns;
	bool commit_alone = sp_model_commit_alone (costs);
	uint64_t share = sp_model_share (costs);
	out->work_ns = (sp + writer + (commit_alone ? 0 : costs->commit_ns)) * (costs->work_permille ? costs->work_permille : 1000) / 1000;
	/* Work that fits one period's whole share needs no hand-off between periods, whose cost u stands for. */
	SpModelCosts whole = *costs;
	whole.use_permille = 1000;
	if (out->work_ns <= sp_model_share (&whole))
		share = sp_model_share (&whole);
	out->periods = sp_model_div_up (out->work_ns, share);
	if (!out->periods)
		out->periods = 1;
	out->cycle_ns = (out->periods - 1) * costs->period_ns + (out->work_ns - (out->periods - 1) * share) + costs->latency_ns;
	uint64_t by_buffers = sp_model_periods_by_buffers (state, costs);
	if (by_buffers > out->periods) {
		out->periods = by_buffers;
		out->cycle_ns = (out->periods - 1) * costs->period_ns + out->work_ns / out->periods + costs->latency_ns;
	}
	if (commit_alone)
		out->cycle_ns = out->periods++ * costs->period_ns + costs->commit_ns;
	out->bytes = state->bytes;
}

/* A moving average over cycles, a quarter of the way to each new value; 0 is "none yet". */
static uint64_t
sp_model_average (uint64_t average, uint64_t value)
{
	return average ? (3 * average + value) / 4 : value;
}

void
sp_model_learn (SpModelLearned *learned, const SpModelState *units, const SpModelCosts *costs, uint64_t work_ns,
		uint64_t cycle_ns, uint64_t release_wait_ns)
{
	learned->work_permille = sp_model_average (learned->work_permille, sp_model_work_permille (units, costs, work_ns));
	SpModelCosts whole = *costs;
	whole.use_permille = 1000;
	uint64_t apart = release_wait_ns;
	/* A commit alone starts a little after its period's release: the work's periods are what is left, rounded. */
	if (sp_model_commit_alone (costs))
		apart += costs->commit_ns + costs->period_ns / 2;
	uint64_t spread = cycle_ns > apart ? cycle_ns - apart : 0;
	if (work_ns > sp_model_share (&whole) && spread > costs->period_ns)
		learned->use_permille = sp_model_average (learned->use_permille, sp_model_use_permille (costs, work_ns, spread));
	if (work_ns <= sp_model_share (&whole) && spread <= costs->period_ns && !sp_model_commit_alone (costs)) {
		uint64_t beyond = spread > work_ns ? spread - work_ns : 0;
		beyond = beyond < costs->pause_ns ? beyond : costs->pause_ns;
		/* An eighth of the way: a stall within the period is one sample among many. */
		learned->latency_ns = learned->latency_ns ? (7 * learned->latency_ns + beyond) / 8 : beyond;
	}
	learned->cycles++;
}

uint32_t
sp_model_verdict_add (SpModelVerdict *verdict, bool late)
{
	verdict->calls++;
	verdict->late += late;
	if (verdict->calls < SP_MODEL_VERDICT_CALLS)
		return 0;
	uint32_t late_calls = verdict->late * 4 >= verdict->calls ? verdict->late : 0;
	*verdict = (SpModelVerdict){ 0 };
	return late_calls;
}

bool
sp_model_starved (uint64_t running_ns, uint64_t work_ns, uint64_t period_ns, uint64_t pause_ns)
{
	if (period_ns == 0)
		return false;
	uint64_t periods = running_ns / period_ns;
	return periods >= SP_MODEL_STARVED_PERIODS && work_ns < periods * pause_ns / SP_MODEL_STARVED_SHARE;
}

uint64_t
sp_model_interval_add (SpModelIntervals *intervals, uint64_t interval_ns)
{
	intervals->last [intervals->next] = interval_ns;
	intervals->next = (intervals->next + 1) % SP_MODEL_INTERVALS;
	if (intervals->count < SP_MODEL_INTERVALS)
		intervals->count++;
	uint64_t sorted [SP_MODEL_INTERVALS];
	for (uint32_t i = 0; i < intervals->count; i++) {
		uint32_t j = i;
		for (; j > 0 && sorted [j - 1] > intervals->last [i]; j--)
			sorted [j] = sorted [j - 1];
		sorted [j] = intervals->last [i];
	}
	return sorted [intervals->count / 2];
}

/* A period less a target: the least time between the end of one period's runs and the next period's first. */
static uint64_t
sp_model_rest (uint64_t period, uint64_t pause)
{
	return period > pause ? period - pause : 0;
}

uint64_t
sp_model_next_release (uint64_t release, uint64_t window_end, uint64_t ran_until, uint64_t period, uint64_t pause)
{
	uint64_t next = release + period;
	if (ran_until > window_end && ran_until + sp_model_rest (period, pause) > next)
		next = ran_until + sp_model_rest (period, pause);
	return next;
}

uint64_t
sp_model_first_release (uint64_t release, uint64_t window_end, uint64_t ran_until, uint64_t stopped, uint64_t period,
			uint64_t pause)
{
	if (!release)
		return 0;
	uint64_t after_run = ran_until + sp_model_rest (period, pause);
	uint64_t next = ran_until > window_end || after_run < release + period ? after_run : release + period;
	return next + stopped;
}

uint64_t
sp_model_resume_wake (uint64_t now, uint64_t step, uint64_t deadline, uint64_t step_min, uint64_t run_min)
{
	if (now + step_min + run_min > deadline)
		return 0;
	return now + step < deadline - run_min ? now + step : deadline - run_min;
}

void
sp_model_duration_add (SpModelDuration *d, uint64_t ns)
{
	d->avg_ns = (uint64_t)((int64_t)d->avg_ns + ((int64_t)ns - (int64_t)d->avg_ns) / 8);
	uint64_t decayed = d->high_ns > d->avg_ns ? d->high_ns - (d->high_ns - d->avg_ns) / 32 : d->avg_ns;
	d->high_ns = ns > decayed ? ns : decayed;
}

uint64_t
sp_model_due (uint64_t slept, uint64_t until, uint64_t called, uint64_t queued, uint64_t now, uint64_t switch_max)
{
	uint64_t due = called > slept && called < until ? called : until;
	if (due < slept || due > now)
		return now;
	due = now - due > queued ? due + queued : now;
	return now - due > switch_max ? now - switch_max : due;
}

void
sp_model_wake_add (uint64_t *avg_ns, uint64_t sample_ns, uint64_t budget_ns)
{
	uint64_t sample = sample_ns < budget_ns ? sample_ns : budget_ns;
	*avg_ns = (uint64_t)((int64_t)*avg_ns + ((int64_t)sample - (int64_t)*avg_ns) / 16);
}
