/**
 * NodepoolBuilder: the builder bin/nodepool-builder.ts runs. One process, one Gearman identity
 * and one images-dir serve diskimages of every kind; each build runs the method its
 * diskimage's `builder` key names, from this explicit map (a new kind is one more entry).
 */
import { BaseBuilder, type BaseBuilderOptions } from './base-builder.js';
import type { BuildMethods } from './build-method.js';
import { CommandBuild } from './command-builder.js';
import { DibBuild } from './dib-builder.js';
import { SnapshotBuild } from './snapshot-builder.js';
import type { BuildInstancesFactory } from '../../lib/drivers/core/driver-hosts.js';

/** Options of {@link NodepoolBuilder}. */
export interface NodepoolBuilderOptions extends BaseBuilderOptions {
  /** After SIGTERM to a build's process group, SIGKILL follows after this long (default 10 s). */
  killGraceMs?: number;
  /** The build instances of a provider, for `builder: snapshot` (absent: this builder makes no snapshot builds). */
  buildInstances?: BuildInstancesFactory;
}

/** A builder of `builder: dib`, `builder: command` and (given build instances) `builder: snapshot` diskimages. */
export class NodepoolBuilder extends BaseBuilder {
  protected readonly buildMethods: BuildMethods;

  constructor(opts: NodepoolBuilderOptions) {
    super(opts);
    this.buildMethods = {
      dib: new DibBuild(opts), command: new CommandBuild(opts),
      ...(opts.buildInstances ? { snapshot: new SnapshotBuild({ buildInstances: opts.buildInstances }) } : {}),
    };
  }
}
