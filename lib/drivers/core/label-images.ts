/**
 * The image questions of a driver whose labels boot images (openstack, qemu), asked one way for
 * both: has every label of a request something to boot here (RequestHandler.imagesAvailable),
 * and is one label ready (Provider.labelReady). What a label boots is the driver's own answer
 * (its `bootImage`, which takes core's choice of upload from lib/rollout/boot-choice.ts).
 */
import { coerceError } from '../../errors.js';
import type { Logger } from '../../log.js';

/** How a driver finds a label's config and what it boots now. */
export interface LabelImages<L> {
  /** The label's config where the question is asked (a pool, or the provider's first pool serving it). */
  label(name: string): L | undefined;
  /** What the label boots now; undefined when there is nothing to boot. */
  bootImage(label: L): Promise<unknown>;
}

/** Whether every label named has a config and something to boot. */
export async function imagesAvailable<L>(labels: readonly string[], images: LabelImages<L>): Promise<boolean> {
  for (const name of new Set(labels)) {
    const l = images.label(name);
    if (!l || !(await images.bootImage(l))) return false;
  }
  return true;
}

/** Whether the label has something to boot; an error finding out is logged and counts as not ready. */
export async function labelReady<L>(name: string, images: LabelImages<L>, log: Logger): Promise<boolean> {
  const l = images.label(name);
  if (!l) return false;
  try {
    return (await images.bootImage(l)) !== undefined;
  } catch (err) {
    log.warn('could not tell whether the label is ready', { label: name, error: coerceError(err).message });
    return false;
  }
}
