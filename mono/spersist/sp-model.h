/*
 * sp-model.h: the cost model of an incremental cycle (the paper's future
 * work: tell before running whether persistence fits the schedule).
 *
 * A cycle is the SP task's units of work and the writer's slices, run by one
 * server that gets --sp-pause of CPU every --sp-period (sp-cycle.c's
 * budget).  So from the state and the options:
 *
 *   SP work     W_sp = marks * mark + writes * objects + pieces * piece
 *                      + forgets * forget
 *   writer      W_w  = ceil(S / slice_bytes) * slice + floor(S / writeback_bytes) * writeback
 *   commit      C    = commit, when it is at most half the pause (it
 *                      shares a period), else 0
 *   work        W    = (W_sp + W_w + C) * k
 *   share       B    = (pause - wake) * u                (the server's work a period;
 *                                                       u = 1 when W fits one period)
 *   periods     p    = ceil(W / B)
 *   cycle       T    = (p - 1) * period + (W - (p - 1) * B) + L
 *
 * unless the chunk buffers bound it first (the writer in the budget): the
 * SP task fills one buffer while the writer holds the other, and the writer
 * drains its buffer on what the SP task leaves of the budget, so after the
 * first period, which starts with both empty, a period hands the writer one
 * buffer at most.  With S over two buffers of `buffer` bytes:
 *
 *   periods     p    = max (p, ceil (S / buffer) - 1)
 *   cycle       T    = (p - 1) * period + W / p + L      (when the buffers bound p)
 *
 * and a commit longer than half the pause (an fsync to disk) runs alone at
 * the start of the period after the SP task's last: T = p * period + commit,
 * and p counts that period too.
 *
 * where marks, writes, pieces and forgets are the units of each kind the
 * state takes (marking 32 objects or a quarter piece of a long array of
 * references, writing 32 objects, a piece of a long string or array,
 * forgetting 64 KiB of bookkeeping: the last cycle's counts, the best
 * knowledge of the state at SendPData; after a warm restart, estimated from
 * the restored snapshot's objects), S its bytes, and mark, objects, piece,
 * forget, slice, writeback the measured cost of one unit of each kind (moving averages
 * kept by the SP and writer tasks on this machine), wake the SP task's cost of
 * waking up, L the time a cycle takes beyond its work within its last
 * period (the SP task's wake-up and its hand-off to the writer for the
 * commit, learned from cycles that fit one period), k how much more the server's work is than the sum of its
 * units' averages (the first unit of an increment, after a sleep, finds cold
 * caches; the checks between units; measured over past cycles), and u the
 * fraction of the rest the server really uses (measured
 * over past cycles: an increment does not start a unit it has no time left
 * for, the writer not a slice, and the SP task stops early when both
 * buffers are full).  Not in the model: the program's own stores during a cycle
 * (barriers write objects on the program's threads, which shortens the SP
 * task's part) and stalls of the machine.
 *
 * Schedulability: SendPData every `interval` is schedulable when T fits in
 * it; otherwise calls are skipped (--sp-busy=skip) or wait.
 */
#ifndef SP_MODEL_H
#define SP_MODEL_H

#include <stdbool.h>
#include <stdint.h>

/* What is known of the state: the units of work it takes, by kind, and its bytes. */
typedef struct SpModelState {
	uint64_t objects;
	uint64_t marks, writes, pieces, forgets;
	uint64_t bytes;          /* S */
} SpModelState;

/* A state known only by its objects and bytes (a restored snapshot): its units, estimated; marking units only for `marks` (--sp-passes=2). */
void sp_model_state_estimate (SpModelState *state, uint64_t objects, uint64_t bytes, bool marks);

/* Measured costs of one unit of each kind, and the budget. */
typedef struct SpModelCosts {
	uint64_t mark_ns;        /* marking 32 objects */
	uint64_t objects_ns;     /* writing 32 objects */
	uint64_t piece_ns;       /* one piece of a long object */
	uint64_t forget_ns;      /* one step of forgetting */
	uint64_t slice_ns;       /* the writer's slice */
	uint64_t slice_bytes;
	uint64_t commit_ns;      /* the commit (sp_stream_finish), wall time, average */
	uint64_t writeback_ns;   /* a writeback step (0: the store has none) */
	uint64_t writeback_bytes;
	uint64_t buffer_bytes;   /* a chunk buffer (--sp-buffer), when the writer is in the budget; 0: no bound */
	uint64_t wake_ns;        /* the SP task's wake-up, a period */
	uint64_t latency_ns;     /* L: a cycle's time beyond its work in its last period (0: none learned) */
	uint64_t use_permille;   /* u, in thousandths (0: 1000) */
	uint64_t work_permille;  /* k: the server's work over the sum of its units' costs, thousandths (0: 1000) */
	uint64_t pause_ns, period_ns;
} SpModelCosts;

typedef struct SpModelPrediction {
	uint64_t work_ns;        /* W */
	uint64_t periods;        /* p: the SP task's increments, about */
	uint64_t cycle_ns;       /* T */
	uint64_t bytes;          /* S */
} SpModelPrediction;

void sp_model_predict (const SpModelState *state, const SpModelCosts *costs, SpModelPrediction *out);
/* The server's work a period: B. */
uint64_t sp_model_share (const SpModelCosts *costs);
/* k as the cycle just measured shows it: its work over what its own units' costs add up to (thousandths, 500-5000). */
uint64_t sp_model_work_permille (const SpModelState *units, const SpModelCosts *costs, uint64_t work_ns);
/* u as the cycle just measured shows it: its work over its periods' shares, the last period's half (a thousandth at least, 1000 at most). */
uint64_t sp_model_use_permille (const SpModelCosts *costs, uint64_t work_ns, uint64_t cycle_ns);
/*
 * What past cycles taught: k and u as moving averages (0: not learned yet),
 * and how many cycles they were learned from.  u is learned only from a
 * cycle whose work needed more than one period's whole share: a cycle that
 * fit one period's budget but ran past the period was stalled (the program
 * or the machine took the CPU), and says nothing of how much of a budget the
 * server uses; learning from it drove u down and the model predicted three
 * periods for a cycle of a fifth of one.
 */
typedef struct SpModelLearned {
	uint64_t work_permille, use_permille;
	uint64_t latency_ns;     /* L, a moving average (an eighth of the way) over cycles that fit one period */
	uint64_t cycles;
} SpModelLearned;

/*
 * A cycle of `units` took `work_ns` of the server's work and `cycle_ns` from
 * start to commit, of which `release_wait_ns` waiting for its first release:
 * learn from it.  u is learned from the periods the work spread over: the
 * cycle less what a prediction adds apart from them (the wait for the
 * release, and a commit that runs alone, sp_model_predict).  Learned from
 * the whole cycle, u counted those periods as unused budget, and the
 * prediction then added them again: on disk (a commit alone of 0.9 ms a
 * cycle) 25,000 objects' cycles of 24.4 ms on average were predicted at
 * 30.0 (session 28).
 *
 * L is learned from a cycle whose work fit one period's whole share and that
 * ended within a period of its release: what it took beyond its work, a
 * pause at most (more is a stall).  Without it a cycle of 30 us of work was
 * predicted at 30 us and took 110 (a 1 kHz loop persisting 100 objects; the
 * SP task's wake-up and the writer's: session 29).
 */
void sp_model_learn (SpModelLearned *learned, const SpModelState *units, const SpModelCosts *costs, uint64_t work_ns,
		     uint64_t cycle_ns, uint64_t release_wait_ns);
/* Cycles learned from before a prediction is trusted enough to warn the user. */
#define SP_MODEL_CALIBRATION_CYCLES 2

/*
 * The verdict the user is told (once, on stderr): calls to SendPData judged
 * in blocks of SP_MODEL_VERDICT_CALLS, after calibration; a block of which
 * at least a quarter came while a cycle ran that the model says cannot fit
 * the interval is a schedule to change.  A single late call is not: a
 * state whose cycle needs most of a period's budget has a cycle stretched
 * over two periods now and then by a stall of the machine (measured: 1 to
 * 15 calls in a thousand, a 1 kHz loop persisting 1,000 objects with
 * --sp-pause=200), and the warning then spoke of a schedule that held.
 */
#define SP_MODEL_VERDICT_CALLS 32
typedef struct SpModelVerdict {
	uint32_t calls, late;
} SpModelVerdict;

/* One call judged (late: while a cycle ran that the model says is longer than the interval); a block
 * that ends unschedulable returns its late calls, anything else 0. */
uint32_t sp_model_verdict_add (SpModelVerdict *verdict, bool late);

/*
 * A cycle persistence cannot finish: SP_MODEL_STARVED_PERIODS of the SP
 * task's periods after its start, its increments and the budgeted writer's
 * slices have had less than 1/SP_MODEL_STARVED_SHARE of the budget those
 * periods gave them (--sp-pause each).  The model's verdict cannot say so:
 * it judges calls against cycles it has learned, and such a cycle never
 * ends to be learned from.  Measured (a 1 kHz loop at SCHED_FIFO 60 storing
 * into all of 100,000 objects every period, the SP task at 50 on the same
 * CPU, session 43): three cycles in 4,400 periods, each about 10 s against
 * a prediction of 26 ms, every deadline missed, and no warning.  A cycle
 * that has its budget uses most of it: its increments run a unit past
 * their target at most, and end early only for a barrier waiting for the
 * lock or for buffers the writer has not drained (then the writer's
 * slices use the rest).
 */
#define SP_MODEL_STARVED_PERIODS 100
#define SP_MODEL_STARVED_SHARE 8
bool sp_model_starved (uint64_t running_ns, uint64_t work_ns, uint64_t period_ns, uint64_t pause_ns);

/*
 * The program's typical interval between SendPData calls: the median of the
 * last SP_MODEL_INTERVALS.  A call is judged by the longer of its own
 * interval and the typical one: after the machine stalls a periodic loop
 * for tens of periods, the loop catches up with calls microseconds apart,
 * and judged by their own intervals those made a block of late calls and a
 * warning of a schedule that held (a 1 kHz loop persisting 1,000 objects at
 * --sp-pause=200 was warned in 2 of 10 runs after stalls of 14 ms, session
 * 28).  A program whose calls typically come sooner than a cycle is still
 * judged call by call.
 */
#define SP_MODEL_INTERVALS 15
typedef struct SpModelIntervals {
	uint64_t last [SP_MODEL_INTERVALS];
	uint32_t count, next;
} SpModelIntervals;

/* Add one interval; returns the median of those kept. */
uint64_t sp_model_interval_add (SpModelIntervals *intervals, uint64_t interval_ns);

/*
 * The server's releases (sp-cycle.c's SP task), times in ns on one clock.
 * Runs of the period released at R lie in R .. window_end (the target and a
 * twentieth of the period after R); ran_until is when the last run ended.
 *
 * The next period's release: R + period, unless the runs overran the window
 * (a stalled run); then not sooner than a period less a target after the
 * overrun ended, instead of running the missed releases back to back.
 */
uint64_t sp_model_next_release (uint64_t release, uint64_t window_end, uint64_t ran_until, uint64_t period,
				uint64_t pause);
/*
 * A cycle's first release, after an idle time, the last period released at R
 * (0: none; the release is then at once): no sooner than a period less a
 * target after the last run ended, so that no stretch a period long holds
 * more than about a target across the two; and no later than R + period
 * unless the last run overran R's window.  A run shorter than the target
 * brings the release earlier by the rest, so the releases come back to the
 * program's SendPData instead of drifting behind it.  A run that overran
 * (a commit to disk, alone in its period: 1.0-1.3 ms of fsync) keeps its
 * rest too: capped at R + period, the next cycle's first increment came
 * 1.7 ms after such a commit, and one stretch of a period lost 869 us at a
 * 500 us target (session 23).  A cycle's start stopped the program's
 * threads for `stopped` since (the caller of SendPData, at any instant of the
 * period): the release comes that much later, so that the last period's runs,
 * the stop and the first increment still fit one target and a twentieth of a
 * period in any stretch a period long.  Charged only to the next period's
 * budget, one such stretch on one CPU held the last period's 550 us, the
 * stop and 170 us of the next increment: 806 us at a 500 us target, 3 ms
 * period (session 53's run, the Intel host).
 */
uint64_t sp_model_first_release (uint64_t release, uint64_t window_end, uint64_t ran_until, uint64_t stopped,
				 uint64_t period, uint64_t pause);

/*
 * The SP task waiting for the program's stores to stop after a yield: when
 * its step from `now` (`step` long, doubling each time) should end, or 0 to
 * give up, a run of `run_min` no longer fitting before `deadline` after a
 * step of `step_min`.  A step that would end past its last useful instant
 * (deadline - run_min) is cut to end there: doubled past it, stores that
 * stopped in time went unseen until the window had passed.
 */
uint64_t sp_model_resume_wake (uint64_t now, uint64_t step, uint64_t deadline, uint64_t step_min, uint64_t run_min);

/*
 * A kind of run's duration as the runs so far showed it: the average (for
 * throughput: how many runs a piece of work takes) and a high estimate (for
 * deciding whether one more run fits what is left of a budget).  The high
 * estimate jumps to any longer run and decays back toward the average by a
 * 32nd of the difference a run, so a long run (a retire slice of 90 us
 * against a usual 35) keeps the next few tens of runs from starting where
 * only the usual time is left, while a steady state's estimate comes back
 * to what its runs take.
 */
typedef struct SpModelDuration {
	uint64_t avg_ns;
	uint64_t high_ns;
} SpModelDuration;

void sp_model_duration_add (SpModelDuration *d, uint64_t ns);

/*
 * When a server asleep since `slept` and woken at `now` was due to run: at
 * `until` (its release; UINT64_MAX: none), or at `called` (a wake-up call,
 * 0: none) if that came during the sleep and first.  Never before the sleep
 * began nor after now, nor more than `switch_max` before now.  The time from
 * it to now is the wake-up's latency, charged to the budget with the run
 * (sp-cycle.c): the program's CPU taken by the switch into the server.  A
 * latency longer than a switch was not the program's CPU: the server waited
 * for a thread that outranks it (the program's own work) or for an idle CPU
 * to wake (the program runs on another).  `queued`: the time the server
 * spent on the run queue since it slept, as the kernel counts it (0 where
 * it does not): other threads ran then, the program's at a higher priority
 * or the writer's, whose own runs are charged as they end; it is not
 * charged.  A server woken by its timer while a 1 kHz loop ran waited for
 * the loop's 40-70 us and was charged them, up to `switch_max`, out of a
 * 200 us budget (session 28).
 */
uint64_t sp_model_due (uint64_t slept, uint64_t until, uint64_t called, uint64_t queued, uint64_t now, uint64_t switch_max);

/*
 * The SP task's wake-up as the model sees it (SpModelCosts.wake_ns): a moving
 * average, a sixteenth of the way to each new sample.  A sample beyond the
 * whole budget is not the task's wake latency but something that held it (a
 * collection's stopped world, the lock): it counts as the budget, so that one
 * such wake-up cannot make every period look too short for any work.
 */
void sp_model_wake_add (uint64_t *avg_ns, uint64_t sample_ns, uint64_t budget_ns);

/* Can a cycle complete between two SendPData `interval_ns` apart? */
static inline bool
sp_model_schedulable (const SpModelPrediction *p, uint64_t interval_ns)
{
	return p->cycle_ns <= interval_ns;
}

#endif
