import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { classifyAddress, describeAddressClass, refusedAddressClass } from '../net/address-policy';
import type { NetworkPolicy } from '../net/address-policy';
import { UnsafeUrlError } from '../net/errors';
import { parseSafeUrl } from '../net/safe-url';
import { InvalidRequestError } from '../errors';

export interface WebhookUrlRules {
  /** Development mode: plain http to loopback is allowed, and private networks are reachable. */
  developmentMode: boolean;
  policy: NetworkPolicy;
  /** Resolves a host name to every address; dns.lookup unless a test stands in for DNS. */
  resolve?: (hostname: string) => Promise<string[]>;
}

const defaultResolve = async (hostname: string): Promise<string[]> =>
  (await dnsLookup(hostname, { all: true, verbatim: true })).map((a) => a.address);

/**
 * Checks a webhook URL at registration (DESIGN §6): https only (plain http to loopback in
 * development mode), and a host that is not, and does not resolve to, an address deliveries would
 * refuse. Deliveries check again at connect time, since DNS can change after registration. `field`
 * is the request field that named it (a job's callback is named by each door its own way).
 */
export async function checkWebhookUrl(input: string, rules: WebhookUrlRules, field = 'url'): Promise<string> {
  let url: URL;
  try {
    url = parseSafeUrl(input);
  } catch (err) {
    throw new InvalidRequestError(
      `${field}: ${err instanceof UnsafeUrlError ? err.message : 'not a valid URL'}`,
      field,
    );
  }
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const literal = isIP(host) !== 0;
  if (url.protocol !== 'https:') {
    const loopback = host === 'localhost' || (literal && classifyAddress(host) === 'loopback');
    if (!(rules.developmentMode && loopback)) {
      throw new InvalidRequestError(
        rules.developmentMode
          ? `${field}: must be https (plain http is allowed only to loopback in development mode).`
          : `${field}: must be https.`,
        field,
      );
    }
  }
  if (url.hash !== '') throw new InvalidRequestError(`${field}: must not have a #fragment.`, field);

  let addresses: string[];
  if (literal) addresses = [host];
  else {
    try {
      addresses = await (rules.resolve ?? defaultResolve)(host);
    } catch {
      throw new InvalidRequestError(`${field}: the host '${host}' could not be resolved.`, field);
    }
  }
  for (const address of addresses) {
    const refused = refusedAddressClass(address, rules.policy);
    if (refused) {
      const what = describeAddressClass(refused);
      throw new InvalidRequestError(
        literal
          ? `${field}: deliveries are refused to ${what}.`
          : `${field}: the host resolves to ${what}; deliveries to it are refused.`,
        field,
      );
    }
  }
  return url.href;
}
