/*
 * The guest's own floor for the 1 ms timer rows: a C loop that does nothing
 * but read the clock for SECONDS, and counts the gaps between two reads, the
 * times the thread lost its CPU (to an interrupt, the kernel, another thread,
 * or the emulator). bench/guest.sh runs two at once, as a busy pair keeps both
 * of the guest's CPUs busy. Prints one JSON line; no part of the library.
 *
 *   spin-gaps [SECONDS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* This thread's time on a CPU and waiting on a run queue, in ms (0 without schedstat). */
static void sched_ms(double *on_cpu, double *queued) {
  unsigned long long run = 0, wait = 0;
  FILE *f = fopen("/proc/thread-self/schedstat", "r");
  if (f) {
    if (fscanf(f, "%llu %llu", &run, &wait) != 2) run = wait = 0;
    fclose(f);
  }
  *on_cpu = run / 1e6;
  *queued = wait / 1e6;
}

int main(int argc, char **argv) {
  char *rest = NULL;
  const double seconds = argc > 1 ? strtod(argv[1], &rest) : 10;
  if (argc > 2 || (rest && *rest) || !(seconds > 0 && seconds <= 600)) {
    fprintf(stderr, "spin-gaps: takes [SECONDS], over 0 and up to 600\n");
    return 2;
  }
  double cpu0, queued0, cpu1, queued1;
  sched_ms(&cpu0, &queued0);
  const double start = now_ms(), end = start + seconds * 1e3;
  double prev = start, lost_ms = 0, max_gap_ms = 0;
  long gaps_100us = 0, gaps_1ms = 0, gaps_2ms = 0, gaps_4ms = 0;
  for (;;) {
    const double t = now_ms(), gap = t - prev;
    prev = t;
    if (gap >= 0.1) {
      gaps_100us++;
      lost_ms += gap;
      gaps_1ms += gap >= 1;
      gaps_2ms += gap >= 2;
      gaps_4ms += gap >= 4;
    }
    if (gap > max_gap_ms) max_gap_ms = gap;
    if (t >= end) break;
  }
  sched_ms(&cpu1, &queued1);
  const double elapsed_ms = prev - start;
  printf("{\"seconds\":%.3f,\"gaps_100us\":%ld,\"gaps_1ms\":%ld,\"gaps_2ms\":%ld,\"gaps_4ms\":%ld,\"gaps_2ms_per_s\":%.2f,"
         "\"lost_percent\":%.2f,\"max_gap_ms\":%.3f,\"on_cpu_ms\":%.1f,\"queued_ms\":%.1f}\n",
         elapsed_ms / 1e3, gaps_100us, gaps_1ms, gaps_2ms, gaps_4ms, gaps_2ms * 1e3 / elapsed_ms,
         100 * lost_ms / elapsed_ms, max_gap_ms, cpu1 - cpu0, queued1 - queued0);
  return 0;
}
