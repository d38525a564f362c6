// An LD_PRELOAD shim for bench/syscall-times.sh: times the system calls of a
// ping-pong on completion events, by the wall clock and the calling thread's
// CPU clock, so that C programs and Node processes can be set side by side.
//   doorbell        a uverbs write() of IB_USER_VERBS_CMD_POST_SEND: rxe's
//                   provider rings the kernel so, and the kernel sends the
//                   message (and wakes its receiver) inside the call
//   arm             an RDMA_VERBS_IOCTL (ibv_req_notify_cq goes through one)
//   event-read      an 8-byte read() (ibv_get_cq_event's)
//   epoll-zero      an epoll wait with a zero timeout
//   epoll-blocking  an epoll wait that may block
// Only calls inside a window count: from the SKIP-th doorbell on, for COUNT
// doorbells (one a round trip), so start-up and warm-up stay out. Over the
// same window the thread's user and system time and its involuntary context
// switches are read (getrusage RUSAGE_THREAD, on the thread that rings). At
// exit one JSON line goes to $SYSCALL_TIMES_OUT (stderr without it).
//   SYSCALL_TIMES_SKIP (4000), SYSCALL_TIMES_COUNT (8000)
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define IB_USER_VERBS_CMD_POST_SEND 28
#define RDMA_IOCTL_MAGIC 0x1b
#define MAX_SAMPLES 65536

enum kind { DOORBELL, ARM, EVENT_READ, EPOLL_ZERO, EPOLL_BLOCKING, KINDS };
static const char *const kind_names[KINDS] = { "doorbell", "arm", "event-read", "epoll-zero", "epoll-blocking" };

static uint32_t wall_ns[KINDS][MAX_SAMPLES], cpu_ns[KINDS][MAX_SAMPLES];
static long samples[KINDS];
static long doorbells, skip = -1, count;
static int in_window;
static struct rusage window_start, window_end;

static ssize_t (*real_write)(int, const void *, size_t);
static ssize_t (*real_read)(int, void *, size_t);
static int (*real_ioctl)(int, unsigned long, void *);
static int (*real_epoll_wait)(int, struct epoll_event *, int, int);
static int (*real_epoll_pwait)(int, struct epoll_event *, int, int, const sigset_t *);

static long env_long(const char *name, long fallback) {
  const char *text = getenv(name);
  char *end;
  long value = text ? strtol(text, &end, 10) : fallback;
  return text && (*end != '\0' || value < 0) ? fallback : value;
}

static uint64_t now_ns(clockid_t clock) {
  struct timespec t;
  clock_gettime(clock, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void record(enum kind kind, uint64_t wall, uint64_t cpu) {
  if (!in_window || samples[kind] >= MAX_SAMPLES) return;
  long at = samples[kind]++;
  wall_ns[kind][at] = (uint32_t)(wall > UINT32_MAX ? UINT32_MAX : wall);
  cpu_ns[kind][at] = (uint32_t)(cpu > UINT32_MAX ? UINT32_MAX : cpu);
}

// Opens the window at the SKIP-th doorbell and closes it COUNT doorbells later.
static void count_doorbell(void) {
  if (skip < 0) {
    skip = env_long("SYSCALL_TIMES_SKIP", 4000);
    count = env_long("SYSCALL_TIMES_COUNT", 8000);
  }
  doorbells++;
  if (doorbells == skip + 1 && count > 0) {
    getrusage(RUSAGE_THREAD, &window_start);
    in_window = 1;
  } else if (in_window && doorbells == skip + count + 1) {
    getrusage(RUSAGE_THREAD, &window_end);
    in_window = 0;
  }
}

// Runs CALL, timed as KIND, and returns what it returned.
#define TIMED(kind, type, call)                                              \
  do {                                                                       \
    uint64_t wall0 = now_ns(CLOCK_MONOTONIC), cpu0 = now_ns(CLOCK_THREAD_CPUTIME_ID); \
    type result = call;                                                      \
    uint64_t cpu1 = now_ns(CLOCK_THREAD_CPUTIME_ID), wall1 = now_ns(CLOCK_MONOTONIC); \
    record(kind, wall1 - wall0, cpu1 - cpu0);                                \
    return result;                                                           \
  } while (0)

ssize_t write(int fd, const void *buffer, size_t length) {
  if (!real_write) real_write = (ssize_t (*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
  uint32_t command = 0;
  uint16_t in_words = 0;
  if (length >= 8) {
    memcpy(&command, buffer, 4);
    memcpy(&in_words, (const char *)buffer + 4, 2);
  }
  // A uverbs command header says its own length in 4-byte words.
  if (length < 8 || command != IB_USER_VERBS_CMD_POST_SEND || (size_t)in_words * 4 != length) return real_write(fd, buffer, length);
  count_doorbell();
  TIMED(DOORBELL, ssize_t, real_write(fd, buffer, length));
}

ssize_t read(int fd, void *buffer, size_t length) {
  if (!real_read) real_read = (ssize_t (*)(int, void *, size_t))dlsym(RTLD_NEXT, "read");
  if (length != 8) return real_read(fd, buffer, length);
  TIMED(EVENT_READ, ssize_t, real_read(fd, buffer, length));
}

int ioctl(int fd, unsigned long request, ...) {
  va_list arguments;
  va_start(arguments, request);
  void *argument = va_arg(arguments, void *);
  va_end(arguments);
  if (!real_ioctl) real_ioctl = (int (*)(int, unsigned long, void *))dlsym(RTLD_NEXT, "ioctl");
  if (((request >> 8) & 0xff) != RDMA_IOCTL_MAGIC) return real_ioctl(fd, request, argument);
  TIMED(ARM, int, real_ioctl(fd, request, argument));
}

int epoll_wait(int epoll, struct epoll_event *events, int max, int timeout) {
  if (!real_epoll_wait) real_epoll_wait = (int (*)(int, struct epoll_event *, int, int))dlsym(RTLD_NEXT, "epoll_wait");
  TIMED(timeout == 0 ? EPOLL_ZERO : EPOLL_BLOCKING, int, real_epoll_wait(epoll, events, max, timeout));
}

int epoll_pwait(int epoll, struct epoll_event *events, int max, int timeout, const sigset_t *mask) {
  if (!real_epoll_pwait) real_epoll_pwait = (int (*)(int, struct epoll_event *, int, int, const sigset_t *))dlsym(RTLD_NEXT, "epoll_pwait");
  TIMED(timeout == 0 ? EPOLL_ZERO : EPOLL_BLOCKING, int, real_epoll_pwait(epoll, events, max, timeout, mask));
}

static int by_value(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return (x > y) - (x < y);
}

/* The q-quantile of n values sorted ascending, in µs. */
static double quantile_us(const uint32_t *sorted, long n, double q) {
  return sorted[(long)(q * (double)(n - 1))] / 1e3;
}

static double microseconds(struct timeval t) {
  return (double)t.tv_sec * 1e6 + (double)t.tv_usec;
}

__attribute__((destructor)) static void report(void) {
  const char *path = getenv("SYSCALL_TIMES_OUT");
  FILE *out = path ? fopen(path, "w") : stderr;
  if (!out) return;
  const int window_closed = count > 0 && doorbells > skip + count;
  fprintf(out, "{\"doorbells\":%ld,\"window\":%ld", doorbells, window_closed ? count : 0);
  if (window_closed) {
    double per = (double)count;
    fprintf(out, ",\"user_us\":%.2f,\"sys_us\":%.2f,\"involuntary\":%.3f,\"voluntary\":%.3f",
            (microseconds(window_end.ru_utime) - microseconds(window_start.ru_utime)) / per,
            (microseconds(window_end.ru_stime) - microseconds(window_start.ru_stime)) / per,
            (double)(window_end.ru_nivcsw - window_start.ru_nivcsw) / per,
            (double)(window_end.ru_nvcsw - window_start.ru_nvcsw) / per);
    for (int kind = 0; kind < KINDS; kind++) {
      long n = samples[kind];
      fprintf(out, ",\"%s\":{\"per_round_trip\":%.3f", kind_names[kind], (double)n / per);
      if (n > 0) {
        qsort(wall_ns[kind], (size_t)n, sizeof wall_ns[kind][0], by_value);
        qsort(cpu_ns[kind], (size_t)n, sizeof cpu_ns[kind][0], by_value);
        fprintf(out, ",\"wall_p50_us\":%.1f,\"wall_p90_us\":%.1f", quantile_us(wall_ns[kind], n, 0.5), quantile_us(wall_ns[kind], n, 0.9));
        fprintf(out, ",\"cpu_p50_us\":%.1f,\"cpu_p90_us\":%.1f", quantile_us(cpu_ns[kind], n, 0.5), quantile_us(cpu_ns[kind], n, 0.9));
      }
      fputc('}', out);
    }
  }
  fputs("}\n", out);
  if (out != stderr) fclose(out);
}
