import { cpuUsage } from 'node:process';
import { parseArgs } from 'node:util';
import { randomStarkPrivateKey, STARK_CURVE_ORDER, starknetTypedDataHash } from '../shared/venues/stark.ts';
import { authTypedData, type ParadexSystemConfig, paradexAccountAddress } from '../shared/venues/venue-c/signing.ts';

/**
 * `npm run bench:stark [-- --accounts 20] [--requests 10]`: what the Stark hashes of venue_a and
 * venue_c cost per call (shared/venues/stark.ts), the first time an account is seen and after. Each
 * account's contract address is derived (`paradexAccountAddress`: venue_c's account proxy), then
 * `requests` auth typed-data hashes (venue_c's `POST /v1/auth` message, a new timestamp each) are
 * made for it, as a driver signs and the venue verifies. The first of each is computed in full;
 * the later ones reuse the Pedersen results they share (the same address; the same domain struct
 * and account). Prints CPU (user + system) per call.
 */
const { values } = parseArgs({ options: { accounts: { type: 'string', default: '20' }, requests: { type: 'string', default: '10' } } });
const ACCOUNTS = Number(values.accounts);
const REQUESTS = Number(values.requests);
if (!Number.isSafeInteger(ACCOUNTS) || ACCOUNTS < 1 || !Number.isSafeInteger(REQUESTS) || REQUESTS < 2)
  throw new Error('--accounts: a positive whole number; --requests: a whole number of at least 2');

/** The fields `paradexAccountAddress` reads, as the sandbox venue_c's `/v1/system/config` gives them (infra/local/venues/venue-c.ts: Paradex testnet's published hashes). */
const CONFIG: ParadexSystemConfig = {
  l1_chain_id: '1',
  starknet_chain_id: 'PRIVATE_SN_PARACLEAR_MAINNET',
  paraclear_account_hash: '0x41cb0280ebadaa75f996d8d92c6f265f6d040bb3ba442e5f86a554f1765244e',
  paraclear_account_proxy_hash: '0x3530cc4759d78042f1b543bf797f5f3d647cde0388c33734cf91b7f7b9314a9',
};

const cpuMs = () => {
  const { user, system } = cpuUsage();
  return (user + system) / 1000;
};

const totals = { addressFirst: 0, addressAgain: 0, hashFirst: 0, hashAgain: 0 };
for (let index = 0; index < ACCOUNTS; index++) {
  const publicKey = (randomStarkPrivateKey() % (STARK_CURVE_ORDER - 1n)) + 1n;
  const address = () => paradexAccountAddress(publicKey, CONFIG);
  let started = cpuMs();
  const account = address();
  totals.addressFirst += cpuMs() - started;
  started = cpuMs();
  if (address() !== account) throw new Error('the contract address changed between two derivations');
  totals.addressAgain += cpuMs() - started;
  for (let request = 0; request < REQUESTS; request++) {
    const timestamp = 1_790_000_000 + index * REQUESTS + request;
    started = cpuMs();
    starknetTypedDataHash(authTypedData(CONFIG.starknet_chain_id, timestamp, timestamp + 300), account);
    const spent = cpuMs() - started;
    if (request === 0) totals.hashFirst += spent;
    else totals.hashAgain += spent;
  }
}

const perCall = (ms: number, calls: number) => `${(ms / calls).toFixed(2)} ms`;
process.stdout.write(
  [
    `stark hashes: ${ACCOUNTS} accounts, ${REQUESTS} auth messages each (CPU per call)`,
    `  contract address, first derivation: ${perCall(totals.addressFirst, ACCOUNTS)}`,
    `  contract address, again:            ${perCall(totals.addressAgain, ACCOUNTS)}`,
    `  auth typed-data hash, account's first: ${perCall(totals.hashFirst, ACCOUNTS)}`,
    `  auth typed-data hash, later:           ${perCall(totals.hashAgain, ACCOUNTS * (REQUESTS - 1))}`,
    '',
  ].join('\n'),
);
