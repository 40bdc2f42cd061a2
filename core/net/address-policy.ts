import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * Which IP addresses an outbound request may connect to. Pure: it judges one address string,
 * and the connection guard applies it to the address a socket is about to use.
 */
export interface NetworkPolicy {
  /** Development mode: loopback and private networks are reachable (local receivers, tests). */
  allowPrivateNetworks: boolean;
  /** Exact addresses reachable whatever their class; for a known internal host, and for tests. */
  trustedAddresses?: readonly string[];
}

export type AddressClass =
  | 'public'
  | 'loopback'
  | 'private'
  | 'uniqueLocal'
  | 'linkLocal'
  | 'carrierGradeNat'
  | 'multicast'
  | 'broadcast'
  | 'unspecified'
  | 'metadata'
  | 'ipv4Mapped'
  | 'ipv4Compatible'
  | 'reserved'
  | 'invalid';

const DESCRIPTIONS: Record<AddressClass, string> = {
  public: 'a public address',
  loopback: 'a loopback address',
  private: 'a private network address',
  uniqueLocal: 'a unique-local (private) IPv6 address',
  linkLocal: 'a link-local address',
  carrierGradeNat: 'a carrier-grade NAT (shared) address',
  multicast: 'a multicast address',
  broadcast: 'the broadcast address',
  unspecified: 'the unspecified address',
  metadata: 'a cloud metadata address',
  ipv4Mapped: 'an IPv4-mapped IPv6 address',
  ipv4Compatible: 'an IPv4-compatible IPv6 address',
  reserved: 'a reserved or special-purpose address',
  invalid: 'not a valid IP address',
};

export function describeAddressClass(addressClass: AddressClass): string {
  return DESCRIPTIONS[addressClass];
}

/** What a developer's own machine and LAN are made of; nothing else opens up in development. */
const DEVELOPMENT_CLASSES: ReadonlySet<AddressClass> = new Set(['loopback', 'private', 'uniqueLocal']);

/**
 * Instance metadata services hand out cloud credentials. Most sit in ranges refused anyway, but
 * AWS's IPv6 one is unique-local, which development mode opens, so they are named and refused
 * in every mode.
 */
const METADATA_ADDRESSES: ReadonlySet<string> = new Set(
  ['169.254.169.254', '169.254.170.2', '100.100.100.200', 'fd00:ec2::254'].map(canonical),
);

/** NAT64's well-known prefix (RFC 6052): the last 32 bits are the IPv4 destination. */
const NAT64_WELL_KNOWN = ipaddr.parseCIDR('64:ff9b::/96');

/** `undefined` when the address may be connected to, else the class that refuses it. */
export function refusedAddressClass(address: string, policy: NetworkPolicy): AddressClass | undefined {
  if (policy.trustedAddresses?.some((trusted) => sameAddress(trusted, address))) return undefined;
  const addressClass = classifyAddress(address);
  if (addressClass === 'public') return undefined;
  if (policy.allowPrivateNetworks && DEVELOPMENT_CLASSES.has(addressClass)) return undefined;
  return addressClass;
}

export function classifyAddress(address: string): AddressClass {
  // Only canonical text counts: lookups and the URL parser yield it, and ipaddr.js would also
  // read "0x7f.1" or "2130706433" as addresses, which no caller of this should be passing.
  if (isIP(address) === 0) return 'invalid';
  return isIP(address) === 4 ? classifyIPv4(ipaddr.IPv4.parse(address)) : classifyIPv6(parseIPv6(address));
}

function classifyIPv4(ip: ipaddr.IPv4): AddressClass {
  if (METADATA_ADDRESSES.has(ip.toNormalizedString())) return 'metadata';
  const range = ip.range();
  switch (range) {
    case 'unicast':
      return 'public';
    case 'loopback':
    case 'private':
    case 'linkLocal':
    case 'carrierGradeNat':
    case 'multicast':
    case 'broadcast':
    case 'unspecified':
      return range;
    default:
      return 'reserved';
  }
}

function classifyIPv6(ip: ipaddr.IPv6): AddressClass {
  if (METADATA_ADDRESSES.has(ip.toNormalizedString())) return 'metadata';
  if (ip.isIPv4MappedAddress()) {
    // The kernel connects ::ffff:a.b.c.d to a.b.c.d, so it is judged as that address. A public
    // one is still refused: no resolver hands out mapped answers for a real host.
    const embedded = classifyIPv4(ip.toIPv4Address());
    return embedded === 'public' ? 'ipv4Mapped' : embedded;
  }
  if (ip.match(NAT64_WELL_KNOWN)) {
    // The gateway forwards to the embedded IPv4 address, so 64:ff9b::7f00:1 is named as the
    // loopback it reaches. A public one is refused too, because request-filtering-agent refuses
    // the whole prefix: an IPv6-only deployment behind DNS64 would need that opened in both.
    const embedded = classifyIPv4(embeddedIPv4(ip));
    return embedded === 'public' ? 'reserved' : embedded;
  }
  const range = ip.range();
  switch (range) {
    case 'unicast':
      // ipaddr.js calls the deprecated IPv4-compatible block ::/96 unicast; ::127.0.0.1 is not a
      // public destination, and nothing legitimate uses the block any more.
      return isIPv4Compatible(ip) ? 'ipv4Compatible' : 'public';
    case 'loopback':
    case 'linkLocal':
    case 'uniqueLocal':
    case 'multicast':
    case 'unspecified':
      return range;
    default:
      // 6to4, Teredo, NAT64 local-use, documentation, discard, site-local: tunnels to addresses
      // we cannot judge, or ranges no public host lives in.
      return 'reserved';
  }
}

function isIPv4Compatible(ip: ipaddr.IPv6): boolean {
  return ip.parts.slice(0, 6).every((part) => part === 0);
}

function embeddedIPv4(ip: ipaddr.IPv6): ipaddr.IPv4 {
  const high = ip.parts[6] ?? 0;
  const low = ip.parts[7] ?? 0;
  return new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]);
}

function sameAddress(a: string, b: string): boolean {
  return isIP(a) !== 0 && isIP(b) !== 0 && canonical(a) === canonical(b);
}

function canonical(address: string): string {
  return (isIP(address) === 4 ? ipaddr.IPv4.parse(address) : parseIPv6(address)).toNormalizedString();
}

/**
 * ipaddr.js reads any IPv6 text ending in a dotted quad as IPv4-mapped, so `::127.0.0.1` (the
 * IPv4-compatible ::7f00:1, which is how glibc prints it) would come back as ::ffff:7f00:1.
 * Rewriting the quad as two hex groups first keeps the two blocks apart.
 */
function parseIPv6(address: string): ipaddr.IPv6 {
  const dotted = /^(.*:)(\d+\.\d+\.\d+\.\d+)$/.exec(address);
  if (!dotted) return ipaddr.IPv6.parse(address);
  const [a = 0, b = 0, c = 0, d = 0] = ipaddr.IPv4.parse(dotted[2] ?? '').toByteArray();
  return ipaddr.IPv6.parse(`${dotted[1] ?? ''}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`);
}
