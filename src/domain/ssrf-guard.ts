import { lookup } from 'node:dns/promises';
import { BlockList, isIP, type LookupFunction } from 'node:net';

// The SSRF guard: a webhook may not reach this machine, its private network, link-local
// addresses or a cloud metadata service. URLs are checked when an endpoint is created or changed, and every
// address is checked again when a delivery connects (DNS can change in between): the sender resolves the host
// through `guardedLookup`, so the address checked is the address connected to. WEBHOOK_ALLOW_PRIVATE=1 lifts
// both the address and the https-only rule (the tests reach their receiver on 127.0.0.1 that way).

const BLOCKED = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8], // "this network"
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local, with 169.254.169.254 (metadata)
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
] as const) {
  BLOCKED.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['64:ff9b::', 96], // NAT64: checked as the IPv4 address it embeds too
  ['100::', 64], // discard
  ['2001:db8::', 32], // documentation
  ['fc00::', 7], // unique local, with AWS's fd00:ec2::254 (metadata)
  ['fe80::', 10], // link-local
  ['ff00::', 8], // multicast
] as const) {
  BLOCKED.addSubnet(network, prefix, 'ipv6');
}

/** The IPv4 address an IPv4-mapped (::ffff:a.b.c.d) or NAT64 (64:ff9b::a.b.c.d) IPv6 address stands for. */
function embeddedIpv4(address: string): string | null {
  const dotted = /^(?:::ffff:|64:ff9b::)(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (dotted) return dotted[1] ?? null;
  const hex = /^(?:::ffff:|64:ff9b::)([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(address);
  if (!hex) return null;
  const high = parseInt(hex[1] ?? '0', 16);
  const low = parseInt(hex[2] ?? '0', 16);
  return [high >> 8, high & 255, low >> 8, low & 255].join('.');
}

/** Whether an IP address is one a webhook may not reach (loopback, private, link-local, metadata, …). */
export function isBlockedAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return BLOCKED.check(address, 'ipv4');
  if (family === 6) {
    const v4 = embeddedIpv4(address);
    if (v4 !== null) return BLOCKED.check(v4, 'ipv4');
    return BLOCKED.check(address, 'ipv6');
  }
  return true;
}

class WebhookTargetError extends Error {
  override name = 'WebhookTargetError';
}

export interface GuardOptions {
  allowPrivate: boolean;
}

const MAX_URL_LENGTH = 2048;

/** The URL's own problems (scheme, credentials, length), without resolving it. */
export function urlProblem(raw: string, { allowPrivate }: GuardOptions): string | null {
  if (raw.length > MAX_URL_LENGTH) return `must be at most ${MAX_URL_LENGTH} characters`;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'must be an absolute URL';
  }
  if (url.protocol !== 'https:' && !(allowPrivate && url.protocol === 'http:')) {
    return allowPrivate ? 'must be an http or https URL' : 'must be an https URL';
  }
  if (url.username || url.password) return 'must not carry credentials (user:password@)';
  if (url.hash) return 'must not have a #fragment';
  if (!url.hostname) return 'must name a host';
  return null;
}

function hostOf(url: URL): string {
  // URL keeps IPv6 literals in brackets.
  return url.hostname.replace(/^\[(.*)\]$/, '$1');
}

/**
 * Every problem of an endpoint URL, resolving its host: null when a webhook may be sent there. Used when an
 * endpoint is created or its URL changed.
 */
export async function targetProblem(raw: string, options: GuardOptions): Promise<string | null> {
  const problem = urlProblem(raw, options);
  if (problem) return problem;
  if (options.allowPrivate) return null;
  const host = hostOf(new URL(raw));
  let addresses: string[];
  try {
    addresses = isIP(host) ? [host] : (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);
  } catch {
    return `host ${host} does not resolve`;
  }
  const blocked = addresses.find(isBlockedAddress);
  return blocked ? `resolves to ${blocked}, a loopback, private, link-local or metadata address` : null;
}

/**
 * A `lookup` for node:http(s) that refuses blocked addresses: the delivery connects only to an address checked
 * at that moment. An IP-literal host never goes through lookup, so the sender checks those itself
 * (`assertLiteralAllowed`).
 */
export function guardedLookup(options: GuardOptions): LookupFunction {
  return (hostname, lookupOptions, callback) => {
    lookup(hostname, { all: true, verbatim: true, family: lookupOptions.family as number | undefined })
      .then((addresses) => {
        const allowed = options.allowPrivate ? addresses : addresses.filter((a) => !isBlockedAddress(a.address));
        if (allowed.length === 0) {
          const blocked = addresses[0]?.address ?? '?';
          callback(new WebhookTargetError(`${hostname} resolves to ${blocked}, which webhooks may not reach`), '', 4);
          return;
        }
        if (lookupOptions.all) (callback as unknown as (e: null, a: typeof allowed) => void)(null, allowed);
        else callback(null, allowed[0]!.address, allowed[0]!.family);
      })
      .catch((error: unknown) => callback(error as NodeJS.ErrnoException, '', 4));
  };
}

/** An IP-literal URL host, checked as guardedLookup checks resolved ones. */
export function assertLiteralAllowed(url: URL, options: GuardOptions): void {
  const host = hostOf(url);
  if (!options.allowPrivate && isIP(host) && isBlockedAddress(host)) {
    throw new WebhookTargetError(`${host} is an address webhooks may not reach`);
  }
}
