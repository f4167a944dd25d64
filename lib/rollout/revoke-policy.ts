/**
 * The revoke policy (issue 24): an operator's revocation of a build (`nodepool image-revoke`,
 * a store record every launcher reads) revokes every upload of it, whatever its counts or
 * written decision say; the boot choice then never boots it. Pure.
 */
import type { RevocationRecord, UploadRecord } from '../store/models.js';
import type { RolloutPolicy, UploadPhase } from './rollout-policy.js';

/** The revocation of `upload`'s build, if any. */
function revocationOf(upload: UploadRecord, revocations: readonly RevocationRecord[]): RevocationRecord | undefined {
  return revocations.find((r) => r.buildId === upload.buildId && r.diskimage === upload.diskimage);
}

export const revokePolicy: RolloutPolicy = {
  name: 'revoke',
  fixedPhase(upload, revocations): UploadPhase | undefined {
    const revoked = revocationOf(upload, revocations);
    return revoked && { state: 'revoked', since: revoked.since, reason: revoked.reason, derived: false };
  },
};
