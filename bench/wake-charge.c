/*
 * An LD_PRELOAD shim that charges a C program what a wake-up costs a Node
 * process under TCG: after each ibv_get_cq_event that returns an event (a
 * sleep on a completion channel has ended), it reads one byte of
 * WAKE_CHARGE_PAGES pages spread over 256 MiB, twice, as `uv-pingpong -t`
 * does on each of its wake-ups (docs/performance-notes.md: under TCG a page
 * costs about 20 times what it costs natively, and a Node process walks
 * several times a C program's pages between two wake-ups).
 *
 *   LD_PRELOAD=./wake-charge.so WAKE_CHARGE_PAGES=1024 rstream ...
 *
 * rsockets sleeps in ibv_get_cq_event when its 10 µs of polling found
 * nothing, so rstream under the shim pays the charge on each sleep and on no
 * completion it caught by polling, as rdmacm pays it. Built and run by
 * bench/wake-charge.sh; no part of the library.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <infiniband/verbs.h>

#define REGION (256L << 20)

typedef int get_cq_event_fn(struct ibv_comp_channel *, struct ibv_cq **, void **);

static volatile unsigned char *region;
static int pages = -1;
static get_cq_event_fn *real_get_cq_event;

static void read_pages(void) {
  long stride = REGION / pages;
  unsigned sum = 0;
  for (int i = 0; i < pages; i++) sum += region[i * stride];
  (void)sum;
}

static void set_up(void) {
  const char *text = getenv("WAKE_CHARGE_PAGES");
  pages = text ? atoi(text) : 0;
  if (pages < 0 || pages > 65536) pages = 0;
  if (pages > 0) {
    region = malloc(REGION);
    if (region) memset((void *)region, 1, REGION);
    else pages = 0;
  }
}

int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq, void **context) {
  if (!real_get_cq_event) real_get_cq_event = (get_cq_event_fn *)dlsym(RTLD_NEXT, "ibv_get_cq_event");
  if (pages < 0) set_up();
  int result = real_get_cq_event(channel, cq, context);
  if (result == 0 && pages > 0) {
    read_pages();
    read_pages();
  }
  return result;
}
