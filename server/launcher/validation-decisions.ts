/**
 * Pure decisions of the validation gate's launcher side (validation-worker.ts): which nodes are
 * validation nodes and what the deleter does with them, the request-shaped record a driver's
 * RequestHandler gets for a validation launch, and the reasons a failed validation records.
 */
import type { ValidationSpec } from '../../lib/drivers/contract/validate-config.js';
import type { SshCommandResult } from '../../lib/ssh/ssh-command.js';
import { validationAllocation, type NodeRecord, type NodeRequestRecord } from '../../lib/store/models.js';
import { deleterVerdict } from './decisions.js';

/** The requestor name of validation launches (never stored as a request). */
export const VALIDATION_REQUESTOR = 'NodePool:validation';

/** Whether a node was booted to validate an upload. */
export function isValidationNode(node: Pick<NodeRecord, 'validatesUpload'>): boolean {
  return typeof node.validatesUpload === 'string' && node.validatesUpload !== '';
}

/**
 * What the deleter does with a node nobody locks: a validation node is deleted in any state but
 * `hold` (an operator may hold one to look at a failed validation); its validator holds its lock
 * while it works, so an unlocked one was left by a finished, stopped or crashed validation. Other
 * nodes as {@link deleterVerdict}.
 */
export function deleterVerdictWithValidation(node: NodeRecord, consumerLive: boolean): 'delete' | 'keep' {
  if (isValidationNode(node)) return node.state === 'hold' ? 'keep' : 'delete';
  return deleterVerdict(node, consumerLive);
}

/** Whether the deleter may give a ready node allocated to a request that is gone back to stock (never a validation node). */
export function mayReturnToStock(node: NodeRecord): boolean {
  return !isValidationNode(node);
}

/**
 * The request a driver's RequestHandler is made with for a validation launch: never stored,
 * only read by the handler (its id for logs, its label for image checks).
 */
export function validationRequest(uploadId: string, provider: string, label: string, now: number): NodeRequestRecord {
  return {
    id: validationAllocation(uploadId), priority: 0, state: 'pending', stateTime: now, created: now, labels: [label],
    requestor: VALIDATION_REQUESTOR, reuse: false, provider, declinedBy: [], nodes: [], reason: null, requestorSession: null,
  };
}

/** The launcher name recorded on validation nodes. */
export function validatorId(hostname: string, pid: number, provider: string): string {
  return `${hostname}-${pid}-Validator.${provider}`;
}

/** The SSH user of the validation command: the spec's, else the node's; null when neither names one. */
export function validationUser(spec: Pick<ValidationSpec, 'username'>, node: Pick<NodeRecord, 'username'>): string | null {
  return spec.username ?? node.username ?? null;
}

/** Why a validation whose command ran did not pass; null when it passed (exit 0). */
export function commandFailure(command: string, r: SshCommandResult, timeoutSeconds: number): string | null {
  if (!r.timedOut && r.exitCode === 0) return null;
  const tail = r.outputTail.trim();
  const output = tail ? `; output tail:\n${tail}` : '';
  if (r.timedOut) return `validation timed out: command ${JSON.stringify(command)} still ran at the ${timeoutSeconds} s deadline${output}`;
  const status = r.exitCode === 255 ? 'ssh exited 255 (could not connect, log in or verify the host key)' : `exited ${r.exitCode ?? 'on a signal'}`;
  return `validation: command ${JSON.stringify(command)} ${status}${output}`;
}

/** Why a validation node did not boot, from its launch's reason (the qemu driver's carries the console tail). */
export function bootFailure(node: Pick<NodeRecord, 'id' | 'reason'>): string {
  return `validation: node ${node.id} did not boot: ${node.reason ?? 'its launch failed without a reason'}`;
}

/** The reason of a validation that ran out of time while `doing`. */
export function timedOut(timeoutSeconds: number, doing: string): string {
  return `validation timed out: ${doing} at the ${timeoutSeconds} s deadline`;
}
