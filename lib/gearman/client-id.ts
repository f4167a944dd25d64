/**
 * A builder's Gearman client id, `<hostname>:<builder-id>`: what gearmand's `workers` shows,
 * and how the server tells which builder holds or runs an image.
 */

/** `<hostname>:<builder-id>`. */
export function builderClientId(hostname: string, builderId: string): string {
  return `${hostname}:${builderId}`;
}

/** The parts of a builder client id; undefined for other ids (`-`, no colon). */
export function parseBuilderClientId(clientId: string): { hostname: string; builderId: string } | undefined {
  const i = clientId.lastIndexOf(':');
  if (i <= 0 || i === clientId.length - 1) return undefined;
  return { hostname: clientId.slice(0, i), builderId: clientId.slice(i + 1) };
}
