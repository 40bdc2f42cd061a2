/**
 * A value that validates against a JSON Schema, made deterministically from a seed: the
 * simulator's structured output and its function-call arguments. It covers what clients send in
 * practice (zod's and Pydantic's schemas: objects, arrays, tuples, enums, `const`, `anyOf`/`oneOf`/
 * `allOf`, `$ref` to `$defs`/`definitions`, nullable type lists, string formats and lengths, number
 * ranges and `multipleOf`). A string `pattern` is tried against a few candidates and is otherwise
 * not guaranteed (docs/decisions/0080-simulator-as-an-agents-model.md).
 */

type Schema = Record<string, unknown>;

const WORDS = [
  'light',
  'water',
  'field',
  'grass',
  'bird',
  'evening',
  'river',
  'stone',
  'cloud',
  'harbour',
  'lamp',
  'tide',
];
/** Deeper than this, optional structure is left out so that a recursive schema ends. */
const MAX_DEPTH = 6;

/** A deterministic stream of numbers in [0, 1) from a text seed (FNV-1a, then mulberry32). */
export function seededRandom(seed: string): () => number {
  let h = 2166136261;
  for (let i = 0; i < seed.length; i++) h = Math.imul(h ^ seed.charCodeAt(i), 16777619) >>> 0;
  let a = h;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A value valid against `schema` (a JSON Schema as an object), the same for the same seed. */
export function sampleOf(schema: unknown, seed: string): unknown {
  const random = seededRandom(seed);
  const root = isSchema(schema) ? schema : {};
  return new Sampler(root, random).value(root, 0, 'value');
}

class Sampler {
  constructor(
    private readonly root: Schema,
    private readonly random: () => number,
  ) {}

  private pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.random() * items.length)]!;
  }

  private words(n: number): string {
    return Array.from({ length: n }, () => this.pick(WORDS)).join(' ');
  }

  private resolve(schema: Schema): Schema {
    let s = schema;
    for (let hops = 0; typeof s.$ref === 'string' && hops < 20; hops++) {
      const target = this.lookup(s.$ref);
      if (!target) break;
      const { $ref: _ref, ...rest } = s;
      s = { ...target, ...rest };
    }
    return s;
  }

  /** `#`, `#/$defs/x`, `#/definitions/x` (any JSON pointer into the root). */
  private lookup(ref: string): Schema | undefined {
    if (!ref.startsWith('#')) return undefined;
    let node: unknown = this.root;
    for (const raw of ref
      .slice(1)
      .split('/')
      .filter((p) => p !== '')) {
      const part = decodeURIComponent(raw).replaceAll('~1', '/').replaceAll('~0', '~');
      node = isSchema(node) ? node[part] : undefined;
    }
    return isSchema(node) ? node : undefined;
  }

  value(given: Schema, depth: number, name: string): unknown {
    const schema = this.resolve(given);
    if ('const' in schema) return schema.const;
    if (Array.isArray(schema.enum) && schema.enum.length > 0) return this.pick(schema.enum);
    if (Array.isArray(schema.allOf)) return this.value(this.merged(schema), depth, name);
    for (const key of ['anyOf', 'oneOf'] as const) {
      const options = schema[key];
      if (Array.isArray(options) && options.length > 0) {
        const schemas = options.filter(isSchema);
        // A real alternative before `null`, unless the schema is deep enough to stop there.
        const concrete = schemas.filter((o) => this.resolve(o).type !== 'null');
        const chosen = depth >= MAX_DEPTH && concrete.length < schemas.length ? { type: 'null' } : concrete[0];
        const { [key]: _alternatives, ...rest } = schema;
        return this.value({ ...rest, ...(chosen ?? schemas[0] ?? {}) }, depth, name);
      }
    }
    switch (this.typeOf(schema)) {
      case 'object':
        return this.object(schema, depth);
      case 'array':
        return this.array(schema, depth, name);
      case 'string':
        return this.string(schema, name);
      case 'integer':
        return this.number(schema, true);
      case 'number':
        return this.number(schema, false);
      case 'boolean':
        return this.random() < 0.5;
      case 'null':
        return null;
      default:
        return this.words(2);
    }
  }

  private typeOf(schema: Schema): string | undefined {
    const type = schema.type;
    if (typeof type === 'string') return type;
    if (Array.isArray(type)) return (type.find((t) => t !== 'null') ?? type[0]) as string | undefined;
    if (isSchema(schema.properties) || schema.required || schema.additionalProperties !== undefined) return 'object';
    if (schema.items !== undefined || schema.prefixItems !== undefined) return 'array';
    if (schema.minimum !== undefined || schema.maximum !== undefined) return 'number';
    return undefined;
  }

  /** The members of `allOf` (and the schema's own keywords) as one schema: properties and required joined. */
  private merged(schema: Schema): Schema {
    const { allOf, ...rest } = schema;
    let out: Schema = rest;
    for (const part of (allOf as unknown[]).filter(isSchema).map((p) => this.resolve(p))) {
      const properties = { ...asSchema(out.properties), ...asSchema(part.properties) };
      const required = [...asStrings(out.required), ...asStrings(part.required)];
      out = { ...out, ...part, properties, required };
    }
    return out;
  }

  private object(schema: Schema, depth: number): Record<string, unknown> {
    const properties = asSchema(schema.properties);
    const required = new Set(asStrings(schema.required));
    const out: Record<string, unknown> = {};
    for (const [key, property] of Object.entries(properties)) {
      // Every property is given (what strict mode asks for), unless a deep recursive one may be left out.
      if (depth >= MAX_DEPTH && !required.has(key)) continue;
      out[key] = this.value(isSchema(property) ? property : {}, depth + 1, key);
    }
    for (const key of required) if (!(key in out)) out[key] = this.words(1);
    const min = typeof schema.minProperties === 'number' ? schema.minProperties : 0;
    const extra = isSchema(schema.additionalProperties) ? schema.additionalProperties : {};
    for (let i = 0; Object.keys(out).length < min; i++)
      out[`${this.pick(WORDS)}_${i}`] = this.value(extra, depth + 1, 'x');
    return out;
  }

  private array(schema: Schema, depth: number, name: string): unknown[] {
    // A tuple: draft 2020-12's prefixItems, or draft 7's array of items.
    const tuple = Array.isArray(schema.prefixItems)
      ? schema.prefixItems
      : Array.isArray(schema.items)
        ? schema.items
        : [];
    const prefix = tuple.filter(isSchema);
    const items = isSchema(schema.items)
      ? schema.items
      : isSchema(schema.additionalItems)
        ? schema.additionalItems
        : undefined;
    const min = typeof schema.minItems === 'number' ? schema.minItems : 0;
    const max = typeof schema.maxItems === 'number' ? schema.maxItems : Infinity;
    const wanted = depth >= MAX_DEPTH ? min : Math.max(min, prefix.length, items ? 2 : 0);
    const length = Math.min(max, items || prefix.length === 0 ? wanted : prefix.length);
    const out: unknown[] = [];
    const seen = new Set<string>();
    for (let i = 0; i < length; i++) {
      const item = prefix[i] ?? items ?? {};
      let v = this.value(item, depth + 1, name);
      // uniqueItems: a few more draws for a value not given yet (an enum of two cannot give three).
      for (let tries = 0; schema.uniqueItems === true && seen.has(JSON.stringify(v)) && tries < 20; tries++)
        v = this.value(item, depth + 1, `${name}${tries}`);
      seen.add(JSON.stringify(v));
      out.push(v);
    }
    return out;
  }

  private string(schema: Schema, name: string): string {
    const min = typeof schema.minLength === 'number' ? schema.minLength : 0;
    const max = typeof schema.maxLength === 'number' ? schema.maxLength : Infinity;
    const candidates = [this.formatted(schema.format, name), this.words(2), name, 'a', '0', 'abc123', 'example'];
    const fit = (s: string) => {
      let t = s;
      while (t.length < min) t += ` ${this.pick(WORDS)}`;
      return t.length > max ? t.slice(0, max) : t;
    };
    if (typeof schema.pattern === 'string') {
      try {
        const re = new RegExp(schema.pattern, 'u');
        const match = candidates.map(fit).find((c) => re.test(c));
        if (match !== undefined) return match;
      } catch {
        // A pattern JavaScript cannot read: the first candidate.
      }
    }
    return fit(candidates[0]!);
  }

  private formatted(format: unknown, name: string): string {
    const n = Math.floor(this.random() * 1000);
    switch (format) {
      case 'date-time':
        return `2026-01-${String(1 + (n % 28)).padStart(2, '0')}T09:30:00Z`;
      case 'date':
        return `2026-01-${String(1 + (n % 28)).padStart(2, '0')}`;
      case 'time':
        return '09:30:00Z';
      case 'email':
        return `${this.pick(WORDS)}@example.com`;
      case 'uri':
      case 'url':
        return `https://example.com/${this.pick(WORDS)}`;
      case 'uuid': {
        const hex = Array.from({ length: 32 }, () => Math.floor(this.random() * 16).toString(16)).join('');
        return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20)}`;
      }
      case 'ipv4':
        return `192.0.2.${n % 255}`;
      case 'hostname':
        return 'example.com';
      default:
        return /name$/i.test(name) ? this.pick(WORDS) : this.words(2);
    }
  }

  private number(schema: Schema, integer: boolean): number {
    const num = (v: unknown) => (typeof v === 'number' ? v : undefined);
    const exMin = num(schema.exclusiveMinimum);
    const exMax = num(schema.exclusiveMaximum);
    let lo = num(schema.minimum) ?? (exMin === undefined ? undefined : exMin + (integer ? 1 : 1e-6));
    let hi = num(schema.maximum) ?? (exMax === undefined ? undefined : exMax - (integer ? 1 : 1e-6));
    if (lo === undefined && hi === undefined) [lo, hi] = [0, 100];
    lo ??= hi! - 100;
    hi ??= lo + 100;
    const step = num(schema.multipleOf);
    if (step !== undefined && step > 0) {
      const first = Math.ceil(lo / step);
      const last = Math.floor(hi / step);
      const k = last >= first ? first + Math.floor(this.random() * (last - first + 1)) : first;
      return Number((k * step).toPrecision(12));
    }
    if (integer) {
      const a = Math.ceil(lo);
      const b = Math.floor(hi);
      return b >= a ? a + Math.floor(this.random() * (b - a + 1)) : a;
    }
    return Math.round((lo + this.random() * (hi - lo)) * 100) / 100;
  }
}

function isSchema(value: unknown): value is Schema {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const asSchema = (value: unknown): Schema => (isSchema(value) ? value : {});
const asStrings = (value: unknown): string[] =>
  Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
