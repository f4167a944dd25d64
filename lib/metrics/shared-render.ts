/**
 * One render of an exposition shared by every scrape that asks while it runs, and reused for
 * a short while after (a second by default, as the web status lists are): a storm of
 * concurrent scrapes costs one set of store reads and one serialisation, not one per scrape.
 */

/** Options of {@link SharedRender}. */
export interface SharedRenderOptions {
  /** Makes a fresh exposition. */
  render: () => Promise<string>;
  /** How long a finished render is reused (default 1000 ms; 0: only shared while it runs). */
  ttlMs?: number;
  /** Epoch ms (default Date.now). */
  clock?: () => number;
}

export class SharedRender {
  private running: Promise<string> | undefined;
  private last: { body: string; at: number } | undefined;
  private readonly clock: () => number;

  constructor(private readonly opts: SharedRenderOptions) {
    this.clock = opts.clock ?? Date.now;
  }

  /** The exposition: the fresh cached one, the one being made, or a new one. A failed render is not kept. */
  get(): Promise<string> {
    const ttl = this.opts.ttlMs ?? 1000;
    if (this.last && this.clock() - this.last.at < ttl) return Promise.resolve(this.last.body);
    this.running ??= (async () => {
      try {
        const body = await this.opts.render();
        this.last = { body, at: this.clock() };
        return body;
      } finally {
        this.running = undefined;
      }
    })();
    return this.running;
  }
}
