/**
 * Keeping secrets out of messages: which keys hold secrets (`password`, `*secret*`, `token`,
 * private keys, credentials), JSON with those keys' values replaced, text with `key: value`
 * pairs and every known secret string replaced by {@link REDACTED}, and a bounded quote of a
 * body a cloud answered. Pure, apart from {@link SecretRegistry}, the set of secret strings a
 * process has loaded (its clouds.yaml passwords, its Keystone tokens), which the logger, the
 * builder's job failures and the cloud error messages all scrub with.
 */

/** What a secret is replaced with. */
export const REDACTED = '<redacted>';

/** Words that make a key a secret one: `password`, `application_credential_secret`, `X-Auth-Token`, `private_key`. */
const SECRET_WORD = 'pass(?:word|wd|phrase)?|secret|token|private[-_ ]?key|api[-_]?key|credential|authorization|cookie';
const SECRET_KEY = new RegExp(`(?:${SECRET_WORD})`, 'i');

/** True when a mapping key names a secret (`password`, `*secret*`, `token`, `private_key`, …). Pure. */
export function isSecretKey(key: string): boolean {
  return SECRET_KEY.test(key);
}

/**
 * True when a key path (`clouds.c1.auth.password`, `diskimages[0].env-vars.DIB_PASSWORD`,
 * `auth.password[0]`) ends in a secret key (list indices aside), so the value at that path
 * must not be printed. Only the last key counts: `token.expires_at` is not a secret. Pure.
 */
export function isSecretPath(path: string): boolean {
  const keys = path.split(/[.[\]]+/).filter((segment) => segment !== '' && !/^\d+$/.test(segment));
  const last = keys[keys.length - 1];
  return last !== undefined && isSecretKey(last);
}

/**
 * A JSON value with the values of secret keys replaced (deeply; objects under such keys are
 * walked). A list under a secret key (`passwords: ["a", "b"]`) has each of its scalars
 * replaced, and the mappings in it walked. Pure.
 */
export function redactJson(value: unknown, underSecretKey = false): unknown {
  if (Array.isArray(value)) return value.map((v) => redactJson(v, underSecretKey));
  if (typeof value !== 'object' || value === null) return underSecretKey && value !== null ? REDACTED : value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    out[k] = isSecretKey(k) && (typeof v !== 'object' || v === null) ? REDACTED : redactJson(v, isSecretKey(k));
  }
  return out;
}

/**
 * `password: x`, `"password": "x"`, `password=x`, `X-Auth-Token: x`, `Bearer x` in any text
 * (a truncated JSON body, a form, an echoed request): the value, up to its closing quote; a
 * list of plain values (`passwords: [a, b]`) whole; an unquoted value up to the end of the
 * line, a separator (`,;&}]`) or the next `key=`/`key:` (so `password: hunter two` loses both
 * words). A value that opens a mapping, or a list of mappings, is left, as its own keys are
 * matched in turn.
 */
const UNQUOTED_VALUE = `[^\\s,;&{}\\[\\]"'](?:[^\\r\\n,;&}\\]"']*?[^\\s,;&}\\]"'])?(?=\\s+[\\w.-]+\\s*[:=]|\\s*(?:[\\r\\n,;&}\\]"']|$))`;
const KEY_VALUE = new RegExp(
  `(["']?)([\\w.-]*(?:${SECRET_WORD})[\\w.-]*)\\1(\\s*[:=]\\s*)(?!(?:Bearer|Basic|Negotiate)\\s)("(?:[^"\\\\]|\\\\.)*"?|'[^']*'?|\\[(?!\\s*[[{])[^\\[\\]{}\\r\\n]*\\]?|${UNQUOTED_VALUE})`,
  'gi',
);
const BEARER = /\b(Bearer|Basic|Negotiate)\s+[\w\-.~+/=]+/g;

/** Text with the values of secret `key: value` pairs and bearer credentials replaced (by `replacement`). Pure. */
export function redactKeyValues(text: string, replacement = REDACTED): string {
  return text
    .replace(BEARER, (_m, scheme: string) => `${scheme} ${replacement}`)
    .replace(KEY_VALUE, (_m, q: string, key: string, sep: string, value: string) => {
      if (value.startsWith('[')) return `${q}${key}${q}${sep}[${replacement}]`;
      const quote = value.startsWith('"') ? '"' : value.startsWith("'") ? "'" : '';
      return `${q}${key}${q}${sep}${quote}${replacement}${quote}`;
    });
}

/**
 * Shortest string scrubbed wherever it appears. A shorter secret (a 3-character password) is
 * kept too, but replaced only as the value of a secret key (`password: abc`, `"token": "abc"`,
 * `passwd=abc`): scrubbed everywhere, `abc` would blank it out of ordinary words and numbers.
 */
export const MIN_SECRET_LENGTH = 4;

/** Most short-lived secrets (tokens) a registry keeps; beyond it the oldest go (a token is renewed hourly for months). */
const MAX_TRANSIENT = 256;

/** A secret key, its separator and an opening quote, then the value (for secrets under {@link MIN_SECRET_LENGTH}). */
const SHORT_IN_CONTEXT = new RegExp(`(["']?[\\w.-]*(?:${SECRET_WORD})[\\w.-]*["']?\\s*[:=]\\s*)(["']?)([^\\s,;&}\\]"']{1,${MIN_SECRET_LENGTH - 1}})(?=$|[\\s,;&}\\]"'])`, 'gi');

/**
 * The secret strings one process knows (passwords from its clouds.yaml, tokens Keystone gave
 * it). Anything that leaves the process — log lines, job failure messages, records — can be
 * passed through {@link scrub}, so a secret that reached a message by any path (an echoed
 * request, an unexpected error text) is still replaced.
 */
export class SecretRegistry {
  /** Configured secrets: kept for the life of the process. */
  private readonly pinned = new Set<string>();
  /** Short-lived ones (tokens), oldest first, at most {@link MAX_TRANSIENT}. */
  private readonly transient = new Set<string>();
  /** Secrets under {@link MIN_SECRET_LENGTH}: replaced as a secret key's value only. */
  private readonly short = new Set<string>();
  private pattern: RegExp | undefined;

  /**
   * Adds a secret (a number is taken as its decimal text). Values shorter than
   * {@link MIN_SECRET_LENGTH} are replaced only as the value of a secret key. `transient`
   * secrets (tokens) are forgotten oldest first once there are many; the others are kept.
   */
  add(value: unknown, opts: { transient?: boolean } = {}): void {
    if (typeof value !== 'string' && typeof value !== 'number') return;
    const text = String(value);
    if (text.length < MIN_SECRET_LENGTH) {
      if (text.trim() !== '') this.short.add(text);
      return;
    }
    const into = opts.transient ? this.transient : this.pinned;
    // The forms a secret takes inside JSON, a URL or a form as well as the plain one.
    for (const form of new Set([text, JSON.stringify(text).slice(1, -1), encodeURIComponent(text)])) {
      if (this.pinned.has(form) || into.has(form)) continue;
      into.add(form);
      this.pattern = undefined;
    }
    while (this.transient.size > MAX_TRANSIENT) {
      this.transient.delete(this.transient.values().next().value as string);
    }
  }

  /** How many secret forms are known. */
  get size(): number {
    return this.pinned.size + this.transient.size + this.short.size;
  }

  /**
   * `text` with every known secret replaced by `replacement` ({@link REDACTED} unless given);
   * one under {@link MIN_SECRET_LENGTH} only where it is a secret key's value.
   */
  scrub(text: string, replacement = REDACTED): string {
    let out = text;
    if (this.pinned.size + this.transient.size > 0) {
      this.pattern ??= new RegExp([...this.pinned, ...this.transient].sort((a, b) => b.length - a.length).map(escapeRegExp).join('|'), 'g');
      out = out.replace(this.pattern, () => replacement);
    }
    if (this.short.size > 0) {
      out = out.replace(SHORT_IN_CONTEXT, (m, head: string, quote: string, value: string) => (this.short.has(value) ? `${head}${quote}${replacement}` : m));
    }
    return out;
  }

  /**
   * {@link scrub}, then {@link redactKeyValues}: for text from outside (a cloud's answer). Not
   * for our own messages, where `password: expected a string` names a key, not a value.
   */
  redact(text: string, replacement = REDACTED): string {
    return redactKeyValues(this.scrub(text, replacement), replacement);
  }

  /** Forgets every secret (tests). */
  clear(): void {
    this.pinned.clear();
    this.transient.clear();
    this.short.clear();
    this.pattern = undefined;
  }
}

/**
 * The process's secrets. One per process on purpose: the clouds.yaml reader and the Keystone
 * session add to it, and every path out (the logger's format, the builder's job outcome,
 * cloud error messages) scrubs with it, so no path needs the set handed down to it.
 */
export const processSecrets = new SecretRegistry();

/** Longest excerpt of a body quoted in a message (default of {@link quoteBody}). */
export const QUOTE_MAX = 300;

/**
 * A body a cloud (or a proxy) answered, fit to quote in a message: a JSON body with secret
 * keys' values replaced, any known secret and `key: value` secret replaced, whitespace
 * collapsed, and at most `max` characters. Pure apart from reading `secrets`.
 */
export function quoteBody(body: string, opts: { max?: number; secrets?: SecretRegistry } = {}): string {
  const max = opts.max ?? QUOTE_MAX;
  let text = body.trim();
  try {
    text = JSON.stringify(redactJson(JSON.parse(text)));
  } catch {
    // not JSON (text, HTML, a truncated body): the text patterns below still apply
  }
  text = (opts.secrets ?? processSecrets).redact(text).replace(/\s+/g, ' ').trim();
  if (text.length <= max) return text;
  // Secrets were replaced whole before the cut, so the cut never leaves part of one.
  return `${text.slice(0, max)}…`;
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
