/*
 * sp-thread.h: threads spmono starts beside the program's.
 *
 * A thread inherits its creator's scheduling policy and priority.  A
 * control loop runs under SCHED_FIFO (chrt), so a thread it creates, or
 * that a library creates on its behalf (the NATS client's reader, flusher
 * and timer threads when the store is opened), would run at the loop's own
 * real-time priority and take its CPU whenever it has work: the fold task
 * made a 1 kHz loop miss 1,052 of 3,000 periods that way (session 18), the
 * NATS client's threads 6-25 of 5,000 (session 22).  Such threads are
 * created with an explicit SCHED_OTHER instead.
 */
#ifndef SP_THREAD_H
#define SP_THREAD_H

#include <pthread.h>
#include <sched.h>

/* attr, initialized: threads created with it run under SCHED_OTHER, whatever their creator's policy. */
static inline void
sp_thread_attr_normal (pthread_attr_t *attr)
{
	struct sched_param param = { .sched_priority = 0 };
	pthread_attr_init (attr);
	pthread_attr_setinheritsched (attr, PTHREAD_EXPLICIT_SCHED);
	pthread_attr_setschedpolicy (attr, SCHED_OTHER);
	pthread_attr_setschedparam (attr, &param);
}

#endif
