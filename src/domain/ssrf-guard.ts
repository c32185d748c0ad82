import { lookup } from 'node:dns/promises';
import { BlockList, isIP, type LookupFunction } from 'node:net';

// The SSRF guard: a webhook may not reach this machine, its private network, link-local
// addresses or a cloud metadata service. URLs are checked when an endpoint is created or changed, and every
// address is checked again when a delivery connects (DNS can change in between): the sender resolves the host
// through `guardedLookup`, so the address checked is the address connected to. WEBHOOK_ALLOW_PRIVATE=1 lifts
// the address, the https-only and the port rules (the tests reach their receiver on 127.0.0.1 that way).
//
// IPv6 forms that carry or reach an IPv4 address by translation are refused whole, whatever they embed: the
// IPv4-compatible (::/96) and IPv4-translated (::ffff:0:0:0/96) forms, NAT64 (64:ff9b::/96, 64:ff9b:1::/48),
// 6to4 (2002::/16) and Teredo (2001::/32): a gateway on the way could turn them into a private IPv4 address
// this check never saw. Only the IPv4-mapped form (::ffff:a.b.c.d), which this process itself connects to as
// a.b.c.d, is judged by the IPv4 address it holds.
//
// Ports: 443 and 80 (the scheme's own), and 1024-65535. The privileged ports below 1024 are where mail, SSH,
// DNS and other services that are not web servers listen; a webhook has no business there.
//
// A refusal never says what a name resolved to: that would let an admin map the inside of the network.

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
BLOCKED.addSubnet('192.88.99.0', 24, 'ipv4'); // 6to4 relay anycast
for (const [network, prefix] of [
  ['::', 96], // IPv4-compatible, with :: and ::1
  ['::ffff:0:0:0', 96], // IPv4-translated
  ['64:ff9b::', 96], // NAT64
  ['64:ff9b:1::', 48], // NAT64, local use
  ['100::', 64], // discard
  ['2001::', 32], // Teredo
  ['2002::', 16], // 6to4
  ['fec0::', 10], // site-local (deprecated)
  ['2001:db8::', 32], // documentation
  ['fc00::', 7], // unique local, with AWS's fd00:ec2::254 (metadata)
  ['fe80::', 10], // link-local
  ['ff00::', 8], // multicast
] as const) {
  BLOCKED.addSubnet(network, prefix, 'ipv6');
}

/** The eight 16-bit groups of a valid IPv6 address (as isIP accepts it: `::`, a trailing dotted quad). */
function ipv6Groups(address: string): number[] {
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(address);
  const text = dotted
    ? `${address.slice(0, dotted.index)}${((Number(dotted[1]) << 8) | Number(dotted[2])).toString(16)}:${((Number(dotted[3]) << 8) | Number(dotted[4])).toString(16)}`
    : address;
  const [head = '', tail] = text.split('::');
  const parse = (part: string) => (part === '' ? [] : part.split(':').map((group) => parseInt(group, 16)));
  const before = parse(head);
  const after = tail === undefined ? [] : parse(tail);
  return [...before, ...Array<number>(8 - before.length - after.length).fill(0), ...after];
}

/** The IPv4 address an IPv4-mapped IPv6 address (::ffff:a.b.c.d, in any spelling) stands for; null for others. */
function mappedIpv4(address: string): string | null {
  const groups = ipv6Groups(address.replace(/%.*$/, ''));
  if (groups.slice(0, 5).some((group) => group !== 0) || groups[5] !== 0xffff) return null;
  const [high = 0, low = 0] = groups.slice(6);
  return [high >> 8, high & 255, low >> 8, low & 255].join('.');
}

/** Whether an IP address is one a webhook may not reach (loopback, private, link-local, metadata, …). */
export function isBlockedAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return BLOCKED.check(address, 'ipv4');
  if (family === 6) {
    const v4 = mappedIpv4(address);
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

const REFUSED_ADDRESS = 'resolves to an address webhooks may not reach (loopback, private, link-local, metadata, translated or reserved)';

/** The ports a webhook may use: the schemes' own, and the unprivileged range. */
export function isAllowedPort(port: number): boolean {
  return port === 80 || port === 443 || (port >= 1024 && port <= 65535);
}

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
  // WHATWG URL reads `\` as `/` and drops tabs and line breaks; an RFC 3986 reader of the same text (a proxy, a
  // receiver's logs) does not, and sees another host: `https://a\@b/` is host a here and host b there.
  if (url.username || url.password || authorityOf(raw).includes('@')) return 'must not carry credentials (user:password@)';
  if (/[\\\t\r\n]/.test(raw)) return 'must not contain a backslash, tab or line break';
  if (url.hash) return 'must not have a #fragment';
  if (!url.hostname) return 'must name a host';
  // URL leaves out the scheme's default port (443 for https, 80 for http).
  if (!allowPrivate && url.port !== '' && !isAllowedPort(Number(url.port))) return 'must use port 443, 80 or one of 1024-65535';
  return null;
}

/** The text between `scheme://` and the first `/`, `?` or `#`: where RFC 3986 looks for userinfo. */
function authorityOf(raw: string): string {
  return /^[a-z][a-z0-9+.-]*:\/\/([^/?#]*)/i.exec(raw)?.[1] ?? '';
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
  // Which address it was is not said: an admin could otherwise map the internal network by its names.
  return addresses.some(isBlockedAddress) ? REFUSED_ADDRESS : null;
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
          callback(new WebhookTargetError(`${hostname} ${REFUSED_ADDRESS}`), '', 4);
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
