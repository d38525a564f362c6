// A first-in, first-out queue whose shift is O(1): a ring that doubles when
// full. Array#shift moves every element once an array outgrows what V8 can
// trim in place: a riowrite queue of thousands of 64-byte segments spent a
// quarter of its process's time there. Pushing and taking allocate nothing
// once the ring is as large as the queue has been.

export class RingQueue<T> {
  #ring: (T | undefined)[] = new Array<T | undefined>(16).fill(undefined);
  #head = 0;
  #count = 0;

  get length(): number {
    return this.#count;
  }

  push(item: T): void {
    if (this.#count === this.#ring.length) this.#grow();
    this.#ring[(this.#head + this.#count) % this.#ring.length] = item;
    this.#count++;
  }

  /** The oldest item, left in the queue; undefined when empty. */
  peek(): T | undefined {
    return this.#count === 0 ? undefined : this.#ring[this.#head];
  }

  /** Takes the oldest item; undefined when empty. */
  shift(): T | undefined {
    if (this.#count === 0) return undefined;
    const item = this.#ring[this.#head];
    this.#ring[this.#head] = undefined; // not held for the collector's sake
    this.#head = (this.#head + 1) % this.#ring.length;
    this.#count--;
    return item;
  }

  /** Takes every item, oldest first. */
  takeAll(): T[] {
    const items: T[] = [];
    while (this.#count > 0) items.push(this.shift()!);
    return items;
  }

  clear(): void {
    this.#ring.fill(undefined);
    this.#head = 0;
    this.#count = 0;
  }

  /** Doubles the ring, its items moved to the start in order. */
  #grow(): void {
    const grown = new Array<T | undefined>(this.#ring.length * 2).fill(undefined);
    for (let i = 0; i < this.#count; i++) grown[i] = this.#ring[(this.#head + i) % this.#ring.length];
    this.#ring = grown;
    this.#head = 0;
  }
}
