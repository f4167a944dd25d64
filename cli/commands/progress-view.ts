/**
 * How `image-build --follow` shows progress on stderr: on a terminal, bars redrawn in place
 * (one per build or upload, on consecutive lines); elsewhere (a log, a pipe) a line per 10 %
 * step of each job. Notes and results are lines of their own between the bars.
 */
import { progressBar } from '../../lib/status/progress.js';
import type { CommandOutput } from './shared.js';

/** Erase to the end of the line. */
const EL = '\x1b[K';

export class ProgressView {
  /** Bar lines drawn in place; the cursor sits at the end of the last one. */
  private drawn = 0;
  private readonly lastStep = new Map<string, number>();
  private readonly lastNote = new Map<string, string | null>();

  constructor(private readonly out: CommandOutput) {}

  /** Whether bars are redrawn in place (stderr is a terminal). */
  get live(): boolean {
    return this.out.errIsTTY;
  }

  /** A line of its own; bars drawn so far stay above it and the next ones are drawn below. */
  line(text: string): void {
    this.endBar();
    this.out.err(`${text}\n`);
  }

  /** A note shown once per change of `key`'s text, e.g. the server's `waiting` reason. */
  note(text: string | null, key = ''): void {
    if (text !== null && text !== this.lastNote.get(key)) this.line(text);
    this.lastNote.set(key, text);
  }

  /** One job's progress: `[####....]  45% <label>` on a terminal, else `<label>: 45%` per 10 % step. */
  progress(label: string, percent: number): void {
    if (this.live) this.bars([`${progressBar(percent)} ${label}`]);
    else this.step(label, percent, `${label}: ${percent}%`);
  }

  /** Redraws the bars in place (terminal only): one line each, in a stable order. */
  bars(lines: readonly string[]): void {
    if (!this.live || lines.length === 0) return;
    const up = this.drawn > 1 ? `\x1b[${this.drawn - 1}A` : '';
    this.out.err(`\r${up}${lines.map((l) => `${l}${EL}`).join('\n')}`);
    this.drawn = lines.length;
  }

  /** Prints `text` when `key`'s percent first shows or has moved 10 points since it last printed (no terminal). */
  step(key: string, percent: number, text: string): void {
    const last = this.lastStep.get(key);
    if (last !== undefined && Math.abs(percent - last) < 10) return;
    this.lastStep.set(key, percent);
    this.line(text);
  }

  /** Ends the bars drawn in place, leaving them on screen. */
  endBar(): void {
    if (this.drawn > 0) this.out.err('\n');
    this.drawn = 0;
  }
}
