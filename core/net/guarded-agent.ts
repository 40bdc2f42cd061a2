import * as dns from 'node:dns';
import * as net from 'node:net';
import type { Duplex } from 'node:stream';
import {
  RequestFilteringHttpAgent,
  RequestFilteringHttpsAgent,
  type RequestFilteringAgentOptions,
} from 'request-filtering-agent';
import { describeAddressClass, refusedAddressClass, type NetworkPolicy } from './address-policy';
import { UnsafeAddressError } from './errors';

export type Lookup = net.LookupFunction;

export interface ConnectionGuard {
  policy: NetworkPolicy;
  /** Resolves host names; `dns.lookup` unless a test stands in for DNS. */
  lookup?: Lookup;
}

type ConnectionCallback = (error: Error | null, socket: Duplex) => void;
type Connect = (options: net.TcpNetConnectOpts, callback?: ConnectionCallback) => Duplex;

/**
 * Agents that judge every address a socket is about to connect to: an IP literal before the
 * socket exists, a host name inside the socket's own DNS lookup, so the address judged is the
 * address used and a resolver that answers differently a second time gains nothing.
 *
 * Two layers. Ours (address-policy.ts) names the refused class and closes what the library lets
 * through (IPv4-compatible IPv6, cloud metadata in development mode, everything but loopback and
 * private networks in development mode). request-filtering-agent then checks the same address
 * again with its own rules, so a gap in either one alone does not open a hole.
 */
export function createGuardedAgents(guard: ConnectionGuard): {
  http: RequestFilteringHttpAgent;
  https: RequestFilteringHttpsAgent;
} {
  // No keep-alive: a pooled socket would skip the check that a new connection gets.
  const options = { keepAlive: false, ...libraryOptions(guard.policy) };
  class GuardedHttpAgent extends RequestFilteringHttpAgent {
    override createConnection(connectOptions: net.TcpNetConnectOpts, callback?: ConnectionCallback): Duplex {
      return connectGuarded(connectOptions, callback, guard, (o, cb) => super.createConnection(o, cb));
    }
  }
  class GuardedHttpsAgent extends RequestFilteringHttpsAgent {
    override createConnection(connectOptions: net.TcpNetConnectOpts, callback?: ConnectionCallback): Duplex {
      return connectGuarded(connectOptions, callback, guard, (o, cb) => super.createConnection(o, cb));
    }
  }
  return { http: new GuardedHttpAgent(options), https: new GuardedHttpsAgent(options) };
}

function libraryOptions(policy: NetworkPolicy): RequestFilteringAgentOptions {
  return {
    allowPrivateIPAddress: policy.allowPrivateNetworks,
    allowMetaIPAddress: false,
    allowIPAddressList: [...(policy.trustedAddresses ?? [])],
  };
}

function connectGuarded(
  options: net.TcpNetConnectOpts,
  callback: ConnectionCallback | undefined,
  guard: ConnectionGuard,
  connect: Connect,
): Duplex {
  const host = options.host;
  if (host !== undefined && net.isIP(host) !== 0) {
    const refused = refusal(host, guard.policy);
    if (refused) return failedSocket(refused, callback);
  }
  return connect({ ...options, lookup: guardedLookup(guard.lookup ?? defaultLookup, guard.policy) }, callback);
}

const defaultLookup: Lookup = (hostname, options, callback) => dns.lookup(hostname, options, callback);

function guardedLookup(resolve: Lookup, policy: NetworkPolicy): Lookup {
  return (hostname, options, callback) => {
    resolve(hostname, options, (error, result, family) => {
      if (error) {
        callback(error, result, family);
        return;
      }
      // With several answers (Happy Eyeballs asks for all) any one may be tried, so each must pass.
      const addresses = typeof result === 'string' ? [result] : result.map((entry) => entry.address);
      for (const address of addresses) {
        const refused = refusal(address, policy);
        if (refused) {
          callback(refused, options.all ? [] : '', family);
          return;
        }
      }
      callback(null, result, family);
    });
  };
}

function refusal(address: string, policy: NetworkPolicy): UnsafeAddressError | undefined {
  const refused = refusedAddressClass(address, policy);
  return refused === undefined ? undefined : new UnsafeAddressError(refused, describeAddressClass(refused));
}

/** The agent takes its socket from the callback or the return value; either way it fails the request. */
function failedSocket(error: Error, callback: ConnectionCallback | undefined): Duplex {
  const socket = new net.Socket();
  if (callback) callback(error, socket);
  else socket.destroy(error);
  return socket;
}
