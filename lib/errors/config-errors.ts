/** Errors of reading and validating configuration files. */
import { NodepoolError } from './nodepool-error.js';

/** One problem found in a configuration file. */
export interface ConfigProblem {
  /** Dotted key path with array indexes, e.g. `providers[1].pools[0].max-servers`. */
  path: string;
  message: string;
}

/** Thrown when a configuration file cannot be read or does not validate. */
export class ConfigError extends NodepoolError {
  readonly file: string;
  readonly problems: readonly ConfigProblem[];
  constructor(file: string, problems: ConfigProblem[], options?: { cause?: unknown }) {
    super(problems.map((p) => `${file}: ${p.path ? `${p.path}: ` : ''}${p.message}`).join('\n'), options);
    this.file = file;
    this.problems = problems;
  }
}
