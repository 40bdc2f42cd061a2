import { describe, it, expect } from 'vitest';
import ipaddr from 'ipaddr.js';
import { classifyAddress, refusedAddressClass, type AddressClass } from '../../../../core/net/address-policy';

const production = { allowPrivateNetworks: false };
const development = { allowPrivateNetworks: true };

const CLASSES: [string, AddressClass][] = [
  ['8.8.8.8', 'public'],
  ['2606:4700:4700::1111', 'public'],
  ['127.0.0.1', 'loopback'],
  ['127.255.255.254', 'loopback'],
  ['::1', 'loopback'],
  ['10.0.0.1', 'private'],
  ['172.16.0.1', 'private'],
  ['172.31.255.255', 'private'],
  ['192.168.1.1', 'private'],
  ['169.254.1.1', 'linkLocal'],
  ['fe80::1', 'linkLocal'],
  ['100.64.0.1', 'carrierGradeNat'],
  ['100.127.255.255', 'carrierGradeNat'],
  ['224.0.0.1', 'multicast'],
  ['239.255.255.250', 'multicast'],
  ['ff02::1', 'multicast'],
  ['255.255.255.255', 'broadcast'],
  ['0.0.0.0', 'unspecified'],
  ['0.1.2.3', 'unspecified'],
  ['::', 'unspecified'],
  ['fc00::1', 'uniqueLocal'],
  ['fd12:3456:789a::1', 'uniqueLocal'],
  ['169.254.169.254', 'metadata'],
  ['169.254.170.2', 'metadata'],
  ['100.100.100.200', 'metadata'],
  ['fd00:ec2::254', 'metadata'],
  // IPv4 inside IPv6: judged as the IPv4 address the kernel or the gateway will reach.
  ['::ffff:127.0.0.1', 'loopback'],
  ['::ffff:10.0.0.1', 'private'],
  ['::ffff:169.254.169.254', 'metadata'],
  ['::ffff:8.8.8.8', 'ipv4Mapped'],
  ['::ffff:7f00:1', 'loopback'],
  ['::127.0.0.1', 'ipv4Compatible'],
  ['::7f00:1', 'ipv4Compatible'],
  ['::8.8.8.8', 'ipv4Compatible'],
  ['64:ff9b::7f00:1', 'loopback'],
  ['64:ff9b::a9fe:a9fe', 'metadata'],
  ['64:ff9b::a00:1', 'private'],
  ['64:ff9b::808:808', 'reserved'],
  ['64:ff9b:1::a00:1', 'reserved'],
  ['2002:7f00:1::1', 'reserved'],
  ['2001:db8::1', 'reserved'],
  ['192.0.2.1', 'reserved'],
  ['240.0.0.1', 'reserved'],
  ['fec0::1', 'reserved'],
  // Non-canonical forms never reach the policy as addresses; if one did, it is refused.
  ['2130706433', 'invalid'],
  ['0x7f.1', 'invalid'],
  ['localhost', 'invalid'],
];

describe('classifyAddress', () => {
  it.each(CLASSES)('%s is %s', (address, expected) => {
    expect(classifyAddress(address)).toBe(expected);
  });
});

describe('refusedAddressClass', () => {
  it('lets public addresses through and refuses every other class in production', () => {
    for (const [address, addressClass] of CLASSES) {
      expect(refusedAddressClass(address, production)).toBe(addressClass === 'public' ? undefined : addressClass);
    }
  });

  it('opens loopback and private networks in development, and nothing else', () => {
    const opened = new Set<AddressClass>(['public', 'loopback', 'private', 'uniqueLocal']);
    for (const [address, addressClass] of CLASSES) {
      expect(refusedAddressClass(address, development)).toBe(opened.has(addressClass) ? undefined : addressClass);
    }
    // AWS's IPv6 metadata address is unique-local, yet stays refused.
    expect(refusedAddressClass('fd00:ec2::254', development)).toBe('metadata');
  });

  it('trusts exactly the listed addresses, in any spelling', () => {
    const policy = { allowPrivateNetworks: false, trustedAddresses: ['127.0.0.2', 'fd00::0:1'] };
    expect(refusedAddressClass('127.0.0.2', policy)).toBeUndefined();
    expect(refusedAddressClass('fd00::1', policy)).toBeUndefined();
    expect(refusedAddressClass('127.0.0.1', policy)).toBe('loopback');
    expect(refusedAddressClass('fd00::2', policy)).toBe('uniqueLocal');
  });

  it('is at least as strict as request-filtering-agent, which refuses every non-unicast range', () => {
    // One address from each range ipaddr.js names, the library's whole vocabulary.
    const samples = [
      '0.0.0.1',
      '255.255.255.255',
      '224.1.1.1',
      '169.254.3.4',
      '127.0.0.9',
      '100.64.1.1',
      '10.9.9.9',
      '192.0.0.8',
      '192.88.99.1',
      '198.18.0.1',
      '198.51.100.1',
      '203.0.113.1',
      '192.175.48.1',
      '192.52.193.1',
      '::',
      'fe80::9',
      'ff0e::1',
      '::1',
      'fc00::9',
      '::ffff:1.2.3.4',
      'fec0::9',
      '100::1',
      '::ffff:0:1.2.3.4',
      '64:ff9b::1.2.3.4',
      '64:ff9b:1::1',
      '2002::1',
      '2001::1',
      '2001:2::1',
      '2001:3::1',
      '2001:4:112::1',
      '2620:4f:8000::1',
      '2001:10::1',
      '2001:20::1',
      '2001:30::1',
      '5f00::1',
      '2001:db8::9',
      '3fff::1',
    ];
    for (const address of samples) {
      expect(ipaddr.parse(address).range(), address).not.toBe('unicast');
      expect(refusedAddressClass(address, production), address).toBeDefined();
    }
  });
});
