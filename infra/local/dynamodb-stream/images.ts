import type { AttributeValue as SdkAttributeValue } from '@aws-sdk/client-dynamodb';
import type { AttributeValue } from 'aws-lambda';

/** An item in the DynamoDB JSON wire form (what the engines answer and what stream records carry). */
export type WireItem = Record<string, AttributeValue>;

/** The table's key attribute names, hash first (DescribeTable's KeySchema). */
export type KeySchema = readonly string[];

export function keyOf(item: WireItem, schema: KeySchema): WireItem | undefined {
  const key: WireItem = {};
  for (const name of schema) {
    const value = item[name];
    if (value === undefined) return undefined;
    key[name] = value;
  }
  return key;
}

/** One string per item of a table, whatever the order of the key's attributes in the request. */
export function lockName(table: string, key: WireItem): string {
  return `${table}\u0000${canonical(key)}`;
}

/**
 * DynamoDB Streams writes no record for a PutItem or UpdateItem that leaves the item as it was
 * (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Streams.html). Maps and sets
 * have no order in DynamoDB, so they compare without one.
 */
export function sameItem(a: WireItem, b: WireItem): boolean {
  return canonical(a) === canonical(b);
}

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value).sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0));
    return `{${entries.map(([name, inner]) => `${JSON.stringify(name)}:${name === 'SS' || name === 'NS' || name === 'BS' ? canonical([...(inner as string[])].sort()) : canonical(inner)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/**
 * A record's SizeBytes: DynamoDB's item-size rules (attribute names + values; numbers about one
 * byte per two significant digits plus one; 3 bytes per list or map plus 1 per element), from
 * https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html.
 */
export function itemSize(item: WireItem | undefined): number {
  if (!item) return 0;
  let size = 0;
  for (const [name, value] of Object.entries(item)) size += Buffer.byteLength(name) + valueSize(value);
  return size;
}

function valueSize(value: AttributeValue): number {
  if (value.S !== undefined) return Buffer.byteLength(value.S);
  if (value.N !== undefined) return numberSize(value.N);
  if (value.B !== undefined) return Buffer.byteLength(value.B, 'base64');
  if (value.SS !== undefined) return value.SS.reduce((sum, s) => sum + Buffer.byteLength(s), 0);
  if (value.NS !== undefined) return value.NS.reduce((sum, n) => sum + numberSize(n), 0);
  if (value.BS !== undefined) return value.BS.reduce((sum, b) => sum + Buffer.byteLength(b, 'base64'), 0);
  if (value.L !== undefined) return 3 + value.L.reduce((sum, inner) => sum + 1 + valueSize(inner), 0);
  if (value.M !== undefined) return 3 + Object.entries(value.M).reduce((sum, [name, inner]) => sum + 1 + Buffer.byteLength(name) + valueSize(inner), 0);
  return 1;
}

function numberSize(n: string): number {
  const digits = n.replace(/^-/, '').replace(/e.*$/i, '').replace('.', '').replace(/^0+/, '').replace(/0+$/, '');
  return Math.ceil(Math.max(digits.length, 1) / 2) + 1;
}

/** The SDK's deserialised AttributeValue (binaries as bytes) back to the wire form (base64), as a stream record holds it. */
export function wireItem(item: Record<string, SdkAttributeValue>): WireItem {
  const out: WireItem = {};
  for (const [name, value] of Object.entries(item)) out[name] = wireValue(value);
  return out;
}

function wireValue(value: SdkAttributeValue): AttributeValue {
  if (value.S !== undefined) return { S: value.S };
  if (value.N !== undefined) return { N: value.N };
  if (value.B !== undefined) return { B: Buffer.from(value.B).toString('base64') };
  if (value.SS !== undefined) return { SS: value.SS };
  if (value.NS !== undefined) return { NS: value.NS };
  if (value.BS !== undefined) return { BS: value.BS.map((b) => Buffer.from(b).toString('base64')) };
  if (value.L !== undefined) return { L: value.L.map(wireValue) };
  if (value.M !== undefined) return { M: wireItem(value.M) };
  if (value.BOOL !== undefined) return { BOOL: value.BOOL };
  return { NULL: true };
}
