/**
 * The rollout policies every launcher applies, in the order they are asked (rollout-policy.ts
 * says how their answers combine): an operator's revocation first, then a pin, then the
 * canary, then the promotion window. Adding a policy is its file and a line here.
 */
import { canaryPolicy } from './canary-policy.js';
import { pinPolicy } from './pin-policy.js';
import { promoteWindowPolicy } from './promote-window-policy.js';
import type { RolloutPolicy } from './rollout-policy.js';
import { revokePolicy } from './revoke-policy.js';

export const ROLLOUT_POLICIES: readonly RolloutPolicy[] = [revokePolicy, pinPolicy, canaryPolicy, promoteWindowPolicy];
