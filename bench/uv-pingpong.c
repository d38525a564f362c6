/*
 * The C floor of `rdmacm bench lat --wait events` (and `--wait busy-poll`):
 * the same ping-pong, waiting for its receives the way a Node process does, on
 * libuv. RC send/recv, SIZE bytes, inline 0, a receive CQ with a completion
 * channel, sends on a CQ of their own, 1 in 16 signaled (src/bench/loops.ts's
 * shape).
 *
 *   uv-pingpong -s [-m uv|block|busy] [-D] [-p PORT] [-n ITERS] [-w WARMUP] [-z SIZE] [-t PAGES]
 *   uv-pingpong    [-m uv|block|busy] [-D] [-p PORT] [-n ITERS] [-w WARMUP] [-z SIZE] [-t PAGES] [-T] SERVER
 *
 * -m uv (default): the channel's fd is nonblocking and watched by a uv_poll_t,
 *    whose callback takes the event, acks, re-arms and drains, as rdmacm's
 *    FdWatcher callback does. -m block: ibv_get_cq_event blocks, as
 *    `ib_send_lat -e` does. -m busy: polls the CQ without sleeping and hands
 *    libuv a turn (UV_RUN_NOWAIT) once every 1 ms slice, as rdmacm's
 *    busy-poll mode does.
 * -D: each wake-up drains first and re-arms only once the CQ is empty, then
 *    drains once more, in the safe API's order (and bench/events-raw.ts's
 *    default); without it, C's: take the event, re-arm, drain.
 * -T (client, uv or busy): a 1 ms repeating uv timer beside the ping-pong, as
 *    `rdmacm bench lat --timer` runs one (src/bench/timer-probe.ts): how late
 *    each tick came, and for the ticks 2 ms late or more, how much of that
 *    time the thread sat runnable on the run queue and how much it ran
 *    (/proc/thread-self/schedstat).
 * -t PAGES: each wake-up reads one byte of PAGES pages spread over 256 MiB,
 *    twice, timing both passes: a stand-in for the memory a Node process walks
 *    on its way back into JavaScript (docs/performance-notes.md).
 * The client prints one JSON line: the half round trip in µs.
 * Built by bench/run.sh (cc … -luv -lrdmacm -libverbs); no part of the library.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <rdma/rdma_cma.h>
#include <uv.h>

#define DEPTH 64
#define SIGNAL_EVERY 16
#define REGION (256L << 20)
#define MAX_WAKES 100000
#define MAX_TICKS 1000000
#define SLICE_NS 1e6

static struct ibv_cq *recv_cq, *send_cq;
static struct ibv_comp_channel *channel;
static struct ibv_qp *qp;
static struct ibv_mr *mr;
static char buffer[8192] __attribute__((aligned(4096))); /* sends from the first page, receives into the second */
static int size = 2, iters = 1000, warmup = 1000, server, touch_pages, drain_first;
static long sent, received, pending_signaled, wakes;
static double *samples, *first_pass_ns, *second_pass_ns, start_ns;
static volatile unsigned char *region;

/* The timer probe (-T): the lateness of each tick, and the thread's scheduler figures over the late ones. */
static uv_timer_t probe;
static int schedstat_fd = -1;
static long ticks, late_ticks;
static double *lateness_ms, last_tick_ns, last_on_cpu_ns, last_queued_ns, late_sum_ms, late_queued_ms, late_on_cpu_ms;

static void die(const char *what) {
  fprintf(stderr, "uv-pingpong: %s: %s\n", what, strerror(errno));
  exit(1);
}

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

/* This thread's time on a CPU and waiting on a run queue, in ns (/proc/thread-self/schedstat's first two fields). */
static void read_schedstat(double *on_cpu_ns, double *queued_ns) {
  char text[96];
  ssize_t n = schedstat_fd < 0 ? -1 : pread(schedstat_fd, text, sizeof text - 1, 0);
  if (n <= 0) { *on_cpu_ns = *queued_ns = 0; return; }
  text[n] = 0;
  char *rest;
  *on_cpu_ns = strtod(text, &rest);
  *queued_ns = strtod(rest, NULL);
}

static void on_tick(uv_timer_t *timer) {
  (void)timer;
  double now = now_ns(), on_cpu, queued;
  read_schedstat(&on_cpu, &queued);
  double late = (now - last_tick_ns) / 1e6 - 1;
  if (late < 0) late = 0;
  if (ticks < MAX_TICKS) lateness_ms[ticks++] = late;
  if (late >= 2) {
    late_ticks++;
    late_sum_ms += late;
    late_queued_ms += (queued - last_queued_ns) / 1e6;
    late_on_cpu_ms += (on_cpu - last_on_cpu_ns) / 1e6;
  }
  last_tick_ns = now;
  last_on_cpu_ns = on_cpu;
  last_queued_ns = queued;
}

static void post_recv(void) {
  struct ibv_sge sge = { (uintptr_t)(buffer + 4096), 4096, mr->lkey };
  struct ibv_recv_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1 }, *bad;
  if (ibv_post_recv(qp, &wr, &bad)) die("ibv_post_recv");
}

static void post_send(void) {
  struct ibv_sge sge = { (uintptr_t)buffer, size, mr->lkey };
  int signaled = sent % SIGNAL_EVERY == SIGNAL_EVERY - 1;
  struct ibv_send_wr wr = { .wr_id = 2, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
                            .send_flags = signaled ? IBV_SEND_SIGNALED : 0 }, *bad;
  if (ibv_post_send(qp, &wr, &bad)) die("ibv_post_send");
  sent++;
  pending_signaled += signaled;
}

static void reap_sends(void) {
  struct ibv_wc wc[8];
  while (pending_signaled > 0) {
    int n = ibv_poll_cq(send_cq, 8, wc);
    if (n < 0) die("ibv_poll_cq (sends)");
    if (n == 0) return;
    for (int i = 0; i < n; i++)
      if (wc[i].status) { fprintf(stderr, "uv-pingpong: send: %s\n", ibv_wc_status_str(wc[i].status)); exit(1); }
    pending_signaled -= n;
  }
}

/* A receive arrived: the server answers it, the client times it and pings again. 0 when the run is over. */
static int on_receive(void) {
  if (server) {
    post_send();
    post_recv();
    reap_sends();
    return ++received < warmup + iters;
  }
  double end = now_ns();
  post_recv();
  if (received >= warmup) samples[received - warmup] = (end - start_ns) / 2000.0;
  reap_sends();
  if (++received == warmup + iters) return 0;
  start_ns = now_ns();
  post_send();
  return 1;
}

static int drain(void) {
  struct ibv_wc wc[8];
  int n;
  while ((n = ibv_poll_cq(recv_cq, 8, wc)) > 0) {
    for (int i = 0; i < n; i++) {
      if (wc[i].status) { fprintf(stderr, "uv-pingpong: receive: %s\n", ibv_wc_status_str(wc[i].status)); exit(1); }
      if (!on_receive()) return 0;
    }
  }
  if (n < 0) die("ibv_poll_cq (receives)");
  return 1;
}

static void touch_region(void) {
  long stride = REGION / touch_pages;
  unsigned sum = 0;
  for (int i = 0; i < touch_pages; i++) sum += region[i * stride];
  (void)sum;
}

/* One wake-up of either mode: take the channel's event, ack it, re-arm, drain (with -D: drain, re-arm, drain). 0 when the run is over. */
static int wake(void) {
  struct ibv_cq *cq;
  void *context;
  if (ibv_get_cq_event(channel, &cq, &context)) {
    if (errno == EAGAIN) return 1;
    die("ibv_get_cq_event");
  }
  if (touch_pages) {
    /* The same pages both times: what the first pass pays over the second is what a sleep cost them. */
    double t0 = now_ns();
    touch_region();
    double t1 = now_ns();
    touch_region();
    if (wakes < MAX_WAKES) {
      first_pass_ns[wakes] = t1 - t0;
      second_pass_ns[wakes] = now_ns() - t1;
    }
    wakes++;
  }
  ibv_ack_cq_events(cq, 1);
  if (drain_first && !drain()) return 0;
  if (ibv_req_notify_cq(recv_cq, 0)) die("ibv_req_notify_cq");
  return drain();
}

static void on_readable(uv_poll_t *handle, int status, int events) {
  (void)events;
  if (status < 0) { fprintf(stderr, "uv-pingpong: uv_poll: %s\n", uv_strerror(status)); exit(1); }
  if (!wake()) {
    uv_poll_stop(handle);
    uv_stop(uv_default_loop()); /* the timer (-T) would keep the loop alive */
  }
}

/* -m busy: drains the CQ without sleeping; once a 1 ms slice is spent, libuv runs one turn (the timer, if any). */
static void busy_poll(void) {
  double slice_start = now_ns();
  while (drain()) {
    if (now_ns() - slice_start < SLICE_NS) continue;
    uv_run(uv_default_loop(), UV_RUN_NOWAIT);
    slice_start = now_ns();
  }
}

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double percentile(double *sorted, long n, double p) {
  if (n == 0) return 0;
  long at = (long)(p * n + 0.999999) - 1;
  return sorted[at < 0 ? 0 : at >= n ? n - 1 : at];
}

static void set_up_queues(struct rdma_cm_id *id) {
  struct ibv_pd *pd = ibv_alloc_pd(id->verbs);
  if (!pd) die("ibv_alloc_pd");
  channel = ibv_create_comp_channel(id->verbs);
  if (!channel) die("ibv_create_comp_channel");
  recv_cq = ibv_create_cq(id->verbs, DEPTH, NULL, channel, 0);
  send_cq = ibv_create_cq(id->verbs, DEPTH, NULL, NULL, 0);
  if (!recv_cq || !send_cq) die("ibv_create_cq");
  struct ibv_qp_init_attr attr = {
    .send_cq = send_cq, .recv_cq = recv_cq, .qp_type = IBV_QPT_RC,
    .cap = { .max_send_wr = DEPTH, .max_recv_wr = DEPTH, .max_send_sge = 1, .max_recv_sge = 1 },
  };
  if (rdma_create_qp(id, pd, &attr)) die("rdma_create_qp");
  qp = id->qp;
  mr = ibv_reg_mr(pd, buffer, sizeof buffer, IBV_ACCESS_LOCAL_WRITE);
  if (!mr) die("ibv_reg_mr");
  for (int i = 0; i < 16; i++) post_recv();
  if (ibv_req_notify_cq(recv_cq, 0)) die("ibv_req_notify_cq");
}

int main(int argc, char **argv) {
  const char *port = "7480", *mode = "uv";
  int option, with_timer = 0;
  while ((option = getopt(argc, argv, "sDm:p:n:w:z:t:T")) != -1) {
    switch (option) {
      case 's': server = 1; break;
      case 'D': drain_first = 1; break;
      case 'm': mode = optarg; break;
      case 'p': port = optarg; break;
      case 'n': iters = atoi(optarg); break;
      case 'w': warmup = atoi(optarg); break;
      case 'z': size = atoi(optarg); break;
      case 't': touch_pages = atoi(optarg); break;
      case 'T': with_timer = 1; break;
      default: fprintf(stderr, "usage: see the head of bench/uv-pingpong.c\n"); return 2;
    }
  }
  int on_libuv = strcmp(mode, "uv") == 0, busy = strcmp(mode, "busy") == 0;
  if (!on_libuv && !busy && strcmp(mode, "block") != 0) { fprintf(stderr, "uv-pingpong: -m takes uv, block or busy\n"); return 2; }
  if (!server && optind >= argc) { fprintf(stderr, "uv-pingpong: the client needs the server's address\n"); return 2; }
  if (with_timer && (server || !(on_libuv || busy))) { fprintf(stderr, "uv-pingpong: -T is the client's, with -m uv or busy\n"); return 2; }
  if (size < 1 || size > 4096 || iters < 1 || warmup < 0 || touch_pages < 0 || touch_pages > 65536) {
    fprintf(stderr, "uv-pingpong: -z takes 1–4096, -n at least 1, -w at least 0, -t 0–65536\n");
    return 2;
  }
  samples = calloc(iters, sizeof *samples);
  if (touch_pages) {
    region = malloc(REGION);
    first_pass_ns = calloc(MAX_WAKES, sizeof *first_pass_ns);
    second_pass_ns = calloc(MAX_WAKES, sizeof *second_pass_ns);
    if (!region || !first_pass_ns || !second_pass_ns) die("malloc");
    memset((void *)region, 1, REGION);
  }

  struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP, .ai_flags = server ? RAI_PASSIVE : 0 }, *info;
  if (rdma_getaddrinfo(server ? NULL : argv[optind], port, &hints, &info)) die("rdma_getaddrinfo");
  struct rdma_cm_id *id, *listener = NULL;
  if (server) {
    if (rdma_create_ep(&listener, info, NULL, NULL)) die("rdma_create_ep");
    if (rdma_listen(listener, 1)) die("rdma_listen");
    if (rdma_get_request(listener, &id)) die("rdma_get_request");
    set_up_queues(id);
    if (rdma_accept(id, NULL)) die("rdma_accept");
  } else {
    if (rdma_create_ep(&id, info, NULL, NULL)) die("rdma_create_ep");
    set_up_queues(id);
    if (rdma_connect(id, NULL)) die("rdma_connect");
    start_ns = now_ns();
    post_send();
  }

  if (with_timer) {
    lateness_ms = calloc(MAX_TICKS, sizeof *lateness_ms);
    if (!lateness_ms) die("malloc");
    schedstat_fd = open("/proc/thread-self/schedstat", O_RDONLY);
    read_schedstat(&last_on_cpu_ns, &last_queued_ns);
    last_tick_ns = now_ns();
    if (uv_timer_init(uv_default_loop(), &probe) || uv_timer_start(&probe, on_tick, 1, 1)) die("uv_timer");
  }
  if (on_libuv) {
    if (fcntl(channel->fd, F_SETFL, fcntl(channel->fd, F_GETFL) | O_NONBLOCK)) die("fcntl");
    uv_poll_t watch;
    if (uv_poll_init(uv_default_loop(), &watch, channel->fd) || uv_poll_start(&watch, UV_READABLE, on_readable)) die("uv_poll");
    uv_run(uv_default_loop(), UV_RUN_DEFAULT);
  } else if (busy) {
    busy_poll();
  } else {
    while (wake()) {}
  }
  if (with_timer) uv_timer_stop(&probe);
  while (pending_signaled > 0) reap_sends();

  if (!server) {
    qsort(samples, iters, sizeof *samples, by_value);
    printf("{\"mode\":\"%s\",\"order\":\"%s\",\"size\":%d,\"iters\":%d,\"warmup\":%d,\"p50_us\":%.3f,\"p99_us\":%.3f,\"p999_us\":%.3f", mode,
           drain_first ? "drain-first" : "arm-first", size, iters, warmup, percentile(samples, iters, 0.5), percentile(samples, iters, 0.99), percentile(samples, iters, 0.999));
    if (touch_pages) {
      long n = wakes < MAX_WAKES ? wakes : MAX_WAKES;
      qsort(first_pass_ns, n, sizeof *first_pass_ns, by_value);
      qsort(second_pass_ns, n, sizeof *second_pass_ns, by_value);
      printf(",\"touch_pages\":%d,\"first_pass_p50_us\":%.3f,\"second_pass_p50_us\":%.3f", touch_pages,
             percentile(first_pass_ns, n, 0.5) / 1000, percentile(second_pass_ns, n, 0.5) / 1000);
    }
    if (with_timer) {
      qsort(lateness_ms, ticks, sizeof *lateness_ms, by_value);
      printf(",\"timer_ticks\":%ld,\"timer_p50_ms\":%.3f,\"timer_p99_ms\":%.3f,\"timer_max_ms\":%.3f", ticks,
             percentile(lateness_ms, ticks, 0.5), percentile(lateness_ms, ticks, 0.99), percentile(lateness_ms, ticks, 1));
      printf(",\"timer_late_ticks\":%ld,\"timer_late_sum_ms\":%.3f,\"timer_late_queued_ms\":%.3f,\"timer_late_on_cpu_ms\":%.3f",
             late_ticks, late_sum_ms, late_queued_ms, late_on_cpu_ms);
    }
    printf("}\n");
  }
  rdma_disconnect(id);
  return 0;
}
