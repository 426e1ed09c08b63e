import * as S from './shared/enclave/schemas.ts';
import * as A from './shared/accounts/schemas.ts';
import { WithdrawRequest } from './shared/withdrawals/withdraw-rules.ts';
import { parseInput } from './shared/http/validate.ts';
const SECRET = 'SECRETVALUE';
const schemas: any = { ...S, SignRequest: A.SignRequest, WithdrawRequest };
const vals: unknown[] = [SECRET, [SECRET], { a: SECRET }, 5, null, true, '', SECRET.repeat(1000), 1e308];
const fields = ['op_jwt', 'access_key', 'wallet_id', 'encryption_context', 'auth_jwt', 'network', 'wallet_group_id', 'raw_data_hash', 'message', 'encoding', 'transaction', 'chain_id', 'nonce', 'contract_address', 'amount', 'to_address', 'token', 'chain'];
const found = new Set<string>();
for (const [name, schema] of Object.entries(schemas)) {
  if (!(schema as any)?.['~standard']) continue;
  for (const f of fields) for (const val of vals) for (const base of [{}, { op_jwt: 'x', access_key: 'y', wallet_id: 'z' }]) {
    try { parseInput(schema as any, { ...base, [f]: val }, 'body'); } catch (e) { const m = (e as Error).message; if (m.includes(SECRET)) found.add(`${name}.${f}=${JSON.stringify(val).slice(0,20)}: ${m.slice(0, 150)}`); }
  }
  try { parseInput(schema as any, JSON.stringify({ op_jwt: SECRET }), 'body'); } catch (e) { if ((e as Error).message.includes(SECRET)) found.add(`${name} string body`); }
}
console.log([...found].join('\n') || 'none');
