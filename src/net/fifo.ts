// A first-in, first-out queue whose shift is O(1). Array#shift moves every
// element once an array outgrows what V8 can trim in place: a riowrite queue
// of thousands of 64-byte segments spent a quarter of its process's time there.

export class Fifo<T> {
  #items: (T | undefined)[] = [];
  #head = 0;

  get length(): number {
    return this.#items.length - this.#head;
  }

  push(item: T): void {
    this.#items.push(item);
  }

  /** The oldest item, left in the queue; undefined when empty. */
  peek(): T | undefined {
    return this.#items[this.#head];
  }

  /** Takes the oldest item; undefined when empty. */
  shift(): T | undefined {
    if (this.#head === this.#items.length) return undefined;
    const item = this.#items[this.#head];
    this.#items[this.#head++] = undefined; // not held for the collector's sake
    if (this.#head === this.#items.length) this.clear();
    // Taken items' slots are dropped once they are half the array: amortised O(1).
    else if (this.#head >= 1024 && this.#head * 2 >= this.#items.length) {
      this.#items = this.#items.slice(this.#head);
      this.#head = 0;
    }
    return item;
  }

  /** Takes every item, oldest first. */
  takeAll(): T[] {
    const items = this.#items.slice(this.#head) as T[];
    this.clear();
    return items;
  }

  clear(): void {
    this.#items = [];
    this.#head = 0;
  }
}
