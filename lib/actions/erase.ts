/**
 * Operator action: forget a provider (`nodepool erase`): delete its upload records and node
 * records from the state store. Cloud resources (servers, images) are not touched. The caller
 * may ask for confirmation once it knows what would go.
 */
import type { Config } from '../config/schema.js';
import type { Store } from '../store/store.js';
import { refuse, type ActionResult } from './action-result.js';

/** What erasing a provider would delete, for the confirmation. */
export interface ErasePlan {
  provider: string;
  uploads: number;
  nodes: number;
  /** Whether the config still names the provider (a running launcher or builder recreates what it needs). */
  configured: boolean;
}

/** Arguments of {@link eraseProvider}. */
export interface EraseArgs {
  provider: string;
  /** Asked with the plan before anything is deleted; absent: erase without asking. */
  confirm?: (plan: ErasePlan) => Promise<boolean>;
}

/** The answer of {@link eraseProvider}. */
export type EraseResult = ActionResult<{ provider: string; erasedUploads: number; erasedNodes: number }, 'unknown-provider' | 'not-confirmed'>;

/** Erases a provider's records; refused when neither the config nor the store knows it, or when not confirmed. */
export async function eraseProvider({ store, config }: { store: Store; config: Config }, args: EraseArgs): Promise<EraseResult> {
  const { provider } = args;
  const [uploads, nodes] = await Promise.all([store.listUploads({ provider }), store.listNodes({ provider })]);
  const configured = config.providers.some((p) => p.name === provider);
  if (!configured && uploads.length === 0 && nodes.length === 0) {
    return refuse('unknown-provider', `Provider ${provider} not found in ${config.file} or in the state store`);
  }
  if (args.confirm && !await args.confirm({ provider, uploads: uploads.length, nodes: nodes.length, configured })) {
    return refuse('not-confirmed', 'Aborting. No data erased.');
  }
  let erasedUploads = 0;
  let erasedNodes = 0;
  for (const u of uploads) if (await store.deleteUpload(u.id)) erasedUploads++;
  for (const n of nodes) if (await store.deleteNode(n.id)) erasedNodes++;
  return {
    ok: true, provider, erasedUploads, erasedNodes,
    message: `Erased state for provider ${provider}: ${erasedUploads} upload record(s), ${erasedNodes} node record(s). Cloud servers and images were not deleted.`,
  };
}
