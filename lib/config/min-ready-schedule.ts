/**
 * `labels[].min-ready-schedule` (issue 24 §4): min-ready by cron periods. The schema of the
 * entries (cron expressions and time zones are checked with croner at load) and the pure answer
 * to "what is this label's min-ready at instant t, and when does it change next".
 *
 * A period starts at a fire time of an entry and lasts until the next fire of any entry of the
 * label: with `0 7 * * 1-5 → 20` and `0 19 * * 1-5 → 2` the label has 20 from 07:00 to 19:00 on
 * weekdays and 2 from 19:00 until the next 07:00 (over the weekend too). Only fires within the
 * last {@link LOOK_BACK_MS} (8 days) count: before any entry has fired in that window the plain
 * `min-ready` applies. Two entries firing at the same minute: the one listed later wins.
 */
import { Cron } from 'croner';
import { int, list, object, optional, required, string, type Problems, type Schema } from './schema-kit.js';

/** How far back the latest fire is looked for; an older one no longer sets min-ready. */
export const LOOK_BACK_MS = 8 * 86_400_000;
/** How far ahead, and over how many fires at most, the next change of value is looked for. */
const LOOK_AHEAD_MS = 366 * 86_400_000;
const LOOK_AHEAD_FIRES = 250;
/** A fixed start for "does this expression ever fire" (5-field cron repeats within 28 years). */
const EVER_FROM = new Date(Date.UTC(2000, 0, 1));

/** Standard 5-field cron (minute hour day-of-month month day-of-week) and the `@daily` nicknames; no seconds field. */
function compile(expression: string, timezone?: string): Cron {
  return new Cron(expression, { mode: '5-part', ...(timezone !== undefined ? { timezone } : {}) });
}

/** A non-empty string that `problem` accepts (null) or refuses with the message for the key. */
function checkedString(expected: string, problem: (text: string) => string | null): Schema<string> {
  const text = string();
  return {
    expected,
    parse(v: unknown, path: string, p: Problems) {
      const s = text.parse(v, path, p);
      if (s === undefined) return undefined;
      const why = problem(s);
      if (why === null) return s;
      p.add(path, why);
      return undefined;
    },
  };
}

/** A 5-field cron expression that fires at some time; croner's reason otherwise. */
const cronExpression = checkedString('a cron expression', (expr) => {
  try {
    if (compile(expr).nextRun(EVER_FROM) !== null) return null;
  } catch (err) {
    const why = (err instanceof Error ? err.message : String(err)).replace(/^CronPattern:\s*/, '');
    return `expected a cron expression (minute hour day-of-month month day-of-week), got ${JSON.stringify(expr)}: ${why}`;
  }
  return `expected a cron expression that fires, got ${JSON.stringify(expr)}, which matches no date`;
});

/** An IANA time zone name this Node knows (Europe/Berlin, UTC, America/New_York). */
const timeZone = checkedString('an IANA time zone name', (tz) => {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return null;
  } catch {
    return `expected an IANA time zone name such as Europe/Berlin or UTC, got ${JSON.stringify(tz)}`;
  }
});

/** `min-ready-schedule` of a label: `[{cron, min-ready, timezone?}]` (timezone: default the server's local zone). */
export const minReadySchedule = list(object({
  cron: required(cronExpression),
  'min-ready': required(int({ min: 0 })),
  timezone: optional(timeZone),
}));

/** One loaded entry. */
export interface MinReadyScheduleEntry {
  readonly cron: string;
  readonly minReady: number;
  /** Absent: the server's local time zone. */
  readonly timezone?: string | undefined;
}

/** What the answer needs of a label. */
export interface ScheduledLabel {
  /** The plain `min-ready`, outside the schedule's periods. */
  readonly minReady: number;
  readonly minReadySchedule: readonly MinReadyScheduleEntry[];
}

/** A label's min-ready at an instant. */
export interface MinReadyNow {
  minReady: number;
  /** `schedule`: a period of the schedule sets it; `plain`: the label's `min-ready`. */
  source: 'plain' | 'schedule';
  /** The next instant (epoch ms) the value changes and the value from then; null when none within a year (or 250 fires). */
  nextChange: { at: number; minReady: number } | null;
  /** The value holds at least until this instant (epoch ms; the next change, or as far as was looked). */
  holdsUntil: number;
}

interface Compiled {
  cron: Cron;
  minReady: number;
}

interface State {
  minReady: number;
  /** The fire that set it; null: the plain value. */
  since: number | null;
}

/** The latest fire at or before `t`. */
function lastFire(cron: Cron, t: number): number | null {
  // croner's reference is exclusive to the millisecond: one past t includes a fire at t.
  const [d] = cron.previousRuns(1, new Date(t + 1));
  return d ? d.getTime() : null;
}

/** The first fire after `t`. */
function nextFire(cron: Cron, t: number): number | null {
  return cron.nextRun(new Date(t))?.getTime() ?? null;
}

function stateAt(plain: number, entries: readonly Compiled[], t: number): State {
  let best: { at: number; minReady: number } | null = null;
  for (const e of entries) {
    const at = lastFire(e.cron, t);
    if (at === null || at <= t - LOOK_BACK_MS) continue;
    if (best === null || at >= best.at) best = { at, minReady: e.minReady };
  }
  return best ? { minReady: best.minReady, since: best.at } : { minReady: plain, since: null };
}

/**
 * Walks the fires (and the lapse of the current period past the look-back) after `now` in
 * order until the value differs from the one at `now`.
 */
function nextChange(plain: number, entries: readonly Compiled[], start: State, now: number): Pick<MinReadyNow, 'nextChange' | 'holdsUntil'> {
  const nexts = entries.map((e) => nextFire(e.cron, now));
  let since = start.since;
  let t = now;
  for (let step = 0; step < LOOK_AHEAD_FIRES; step++) {
    const fire = Math.min(...nexts.map((n) => n ?? Infinity));
    const lapse = since === null ? Infinity : since + LOOK_BACK_MS;
    const at = Math.min(fire, lapse);
    if (!Number.isFinite(at) || at - now > LOOK_AHEAD_MS) return { nextChange: null, holdsUntil: now + LOOK_AHEAD_MS };
    let value = plain;
    since = null;
    if (fire <= lapse) {
      // A fire at the very instant the period lapses starts a new one.
      entries.forEach((entry, i) => {
        if (nexts[i] !== fire) return;
        value = entry.minReady;
        nexts[i] = nextFire(entry.cron, fire);
      });
      since = fire;
    }
    if (value !== start.minReady) return { nextChange: { at, minReady: value }, holdsUntil: at };
    t = at;
  }
  return { nextChange: null, holdsUntil: t };
}

function compiled(label: ScheduledLabel): Compiled[] {
  return label.minReadySchedule.map((e) => ({ cron: compile(e.cron, e.timezone), minReady: e.minReady }));
}

/** The label's min-ready at `now` (epoch ms), where it comes from, and its next change. */
export function minReadyAt(label: ScheduledLabel, now: number): MinReadyNow {
  if (label.minReadySchedule.length === 0) {
    return { minReady: label.minReady, source: 'plain', nextChange: null, holdsUntil: Infinity };
  }
  const entries = compiled(label);
  const state = stateAt(label.minReady, entries, now);
  return { minReady: state.minReady, source: state.since === null ? 'plain' : 'schedule', ...nextChange(label.minReady, entries, state, now) };
}

/** Only the label's min-ready at `now` (no look-ahead). */
export function currentMinReady(label: ScheduledLabel, now: number): number {
  if (label.minReadySchedule.length === 0) return label.minReady;
  return stateAt(label.minReady, compiled(label), now).minReady;
}
