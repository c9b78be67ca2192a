/* SPDX-License-Identifier: MIT */
/* Fault injection (faults.c): the test builds' hooks into the ring, nothing in any other build. */
#ifndef RINGSUM_FAULTS_H
#define RINGSUM_FAULTS_H

#include "ringsum.h"

#ifdef RINGSUM_FAULTS
void faults_setup(struct ring_config *cfg, struct progress *progress);
int fault_result(const struct input *in, int res);
void fault_lag_read(void);
void fault_lag_hash(void);
void fault_slowdown(uint64_t bytes_hashed);
void fault_lag_small(bool side);
int fault_lag_device(struct io_uring *uring);
#else
static inline void faults_setup(struct ring_config *cfg, struct progress *progress) { (void)cfg; (void)progress; }
static inline int fault_result(const struct input *in, int res) { (void)in; return res; }
static inline void fault_lag_read(void) { }
static inline void fault_lag_hash(void) { }
static inline void fault_slowdown(uint64_t bytes_hashed) { (void)bytes_hashed; }
static inline void fault_lag_small(bool side) { (void)side; }
static inline int fault_lag_device(struct io_uring *uring) { (void)uring; return 0; }
#endif

#endif
