import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { type Address, concat, getContractAddress, type Hex, parseTransaction, zeroHash } from 'viem';
import { getTransactionCount, getTransactionReceipt } from 'viem/actions';
import { getItem, isConditionalCheckFailed, type Table } from '../../db/client.ts';
import { keys } from '../../db/keys.ts';
import { DomainError } from '../../errors.ts';
import { CallWouldFailError, describeChainError, TransactionRevertedError } from '../errors.ts';
import type { EvmCall, EvmChain } from '../evm-chain.ts';
import { EvmSender } from '../sender/evm-sender.ts';
import type { Broadcast, EvmSigner, GasPayer, SendJournal, SendReceipt } from '../sender/ports.ts';
import { DEFAULT_LEASE_TIMING } from '../sender/sender-lease.ts';
import { discardBroadcastRecord } from './broadcast-record.ts';
import { sponsoredExecutorArtifact } from './contracts/sponsored-executor.artifact.ts';

/**
 * Deploying the SponsoredExecutor (the EIP-7702 delegate) from the gas sponsor's wallet, exactly
 * once. It goes through the deterministic-deployment proxy (CREATE2, salt 0): the address depends
 * only on the init code, not on who sends it or at which nonce, so it is the same on every chain
 * (one ALLOWED_7702_DELEGATES entry), anyone's earlier deployment of the same code is found and
 * reused, and a second deployment cannot succeed (the proxy reverts when the address has code).
 * The signed transaction is recorded in the table before it is broadcast (the exactly-once
 * sender's journal, under the sponsor's sender lease): a run after a crash re-sends that very
 * transaction instead of signing another.
 */

/** Arachnid's deterministic-deployment proxy: in anvil's genesis and an OP Stack preinstall; on Ethereum, Arbitrum and Polygon since 2019-2021. */
export const CREATE2_DEPLOYER: Address = '0x4e59b44847b379578588920cA78FbF26c0B4956C';
const SALT: Hex = zeroHash;
const INCLUSION_TIMEOUT_MS = 180_000;

/** Where the SponsoredExecutor of the current artifact lives on any chain that has the proxy. */
export function delegateAddress(): Address {
  return getContractAddress({ opcode: 'CREATE2', from: CREATE2_DEPLOYER, salt: SALT, bytecode: sponsoredExecutorArtifact.bytecode });
}

/** The proxy takes the salt followed by the init code. */
export function delegateDeploymentCall(): EvmCall {
  return { to: CREATE2_DEPLOYER, value: 0n, data: concat([SALT, sponsoredExecutorArtifact.bytecode]) };
}

/** True when `address` holds exactly the artifact's runtime code. */
export async function hasDelegateCode(chain: EvmChain, address: Address): Promise<boolean> {
  const code = await chainCall(chain, () => chain.client.getCode({ address }));
  return code?.toLowerCase() === sponsoredExecutorArtifact.deployedBytecode.toLowerCase();
}

export async function hasDeployer(chain: EvmChain): Promise<boolean> {
  const code = await chainCall(chain, () => chain.client.getCode({ address: CREATE2_DEPLOYER }));
  return code !== undefined && code !== '0x';
}

/** What a deployment costs now, with the sender's headroom (gas +20%, maxFeePerGas). */
export async function deploymentCost(chain: EvmChain, sponsor: Address) {
  const [gas, fees, balance] = await Promise.all([
    chain.estimateGas(sponsor, delegateDeploymentCall()).catch((error: unknown) => {
      if (error instanceof CallWouldFailError)
        throw new DelegateDeploymentError(`deploying the SponsoredExecutor would fail on ${chain.code}: ${error.message}`);
      throw error;
    }),
    chain.fees(),
    chain.balance(sponsor, chain.config.native),
  ]);
  return { gas, maxFeePerGas: fees.maxFeePerGas, needed: gas * fees.maxFeePerGas, balance };
}

/** The sponsor cannot pay for the deployment: fund it with `needed - balance` and run again. */
export class SponsorUnderfundedError extends DomainError {
  readonly cost: Awaited<ReturnType<typeof deploymentCost>>;
  constructor(cost: Awaited<ReturnType<typeof deploymentCost>>) {
    super(422, 'INSUFFICIENT_FUNDS', 'the gas sponsor cannot pay for the delegate deployment');
    this.cost = cost;
  }
}

export class DelegateDeploymentError extends DomainError {
  constructor(message: string) {
    super(502, 'DELEGATE_DEPLOYMENT_FAILED', message);
  }
}

export interface DeploymentOutcome {
  readonly address: Address;
  readonly txHash: Hex;
  readonly gasUsed: bigint;
  /** True when a transaction recorded by an earlier (interrupted) run was re-sent and awaited. */
  readonly resumed: boolean;
}

/**
 * Deploys the delegate from the sponsor, or finishes the deployment an earlier run recorded. The
 * caller has checked that the code is not there yet and that the chain has the proxy.
 * SponsorUnderfundedError before anything is signed when the sponsor cannot pay.
 */
export async function deployDelegate(input: { table: Table; chain: EvmChain; sponsor: GasPayer }): Promise<DeploymentOutcome> {
  const { table, chain, sponsor } = input;
  const from = await sponsor.address();
  const journal = new DeploymentJournal(table, chain.code);
  let previous = await journal.load();
  if (previous && (await isStale(chain, from, previous))) {
    // Its nonce went to another transaction of the sponsor: it can never be mined. Sign anew.
    await journal.discard(previous);
    previous = undefined;
  }
  if (!previous) {
    const cost = await deploymentCost(chain, from);
    if (cost.balance < cost.needed) throw new SponsorUnderfundedError(cost);
  }
  const sender = new EvmSender({ table, inclusionTimeoutMs: INCLUSION_TIMEOUT_MS, lease: DEFAULT_LEASE_TIMING });
  const send = (recorded: Broadcast | undefined) =>
    sender.send({
      chain,
      from,
      call: delegateDeploymentCall(),
      spends: { token: chain.config.native, amount: 0n },
      signer: sponsorSigner(sponsor),
      journal: journal.forSend(recorded),
    });
  let receipt: SendReceipt;
  try {
    receipt = await send(previous);
  } catch (error) {
    if (error instanceof DeploymentRecordedElsewhere) {
      // Another run recorded its transaction first (we broadcast nothing): finish that one.
      receipt = await send(await journal.load());
    } else if (error instanceof TransactionRevertedError) {
      await journal.discard(await journal.load());
      throw new DelegateDeploymentError(`the deployment transaction reverted on ${chain.code} (${error.message}); run the command again`);
    } else {
      throw await asUnderfunded(error, chain, from);
    }
  }
  const mined = await chain.waitForReceipt(receipt.txHash as Hex, INCLUSION_TIMEOUT_MS);
  return { address: delegateAddress(), txHash: receipt.txHash as Hex, gasUsed: mined?.gasUsed ?? 0n, resumed: receipt.resumed };
}

/** The sponsor signs plain transactions only; this send needs nothing else from it. */
function sponsorSigner(sponsor: GasPayer): EvmSigner {
  const unsupported = () => Promise.reject(new Error('the gas sponsor signs transactions only'));
  return { signTransaction: (transaction) => sponsor.signTransaction(transaction), signAuthorization: unsupported, signDigest: unsupported };
}

/** The sender's own funds check (under the lease) refused: report it like ours. */
async function asUnderfunded(error: unknown, chain: EvmChain, from: Address): Promise<unknown> {
  if (!(error instanceof DomainError) || error.code !== 'INSUFFICIENT_FUNDS') return error;
  return new SponsorUnderfundedError(await deploymentCost(chain, from));
}

async function isStale(chain: EvmChain, from: Address, recorded: Broadcast): Promise<boolean> {
  const mined = await chainCall(chain, () => getTransactionReceipt(chain.client, { hash: recorded.tx_hash as Hex })).catch(() => null);
  if (mined) return false;
  const { nonce } = parseTransaction(recorded.raw as Hex);
  const used = await chainCall(chain, () => getTransactionCount(chain.client, { address: from, blockTag: 'latest' }));
  return nonce !== undefined && used > nonce;
}

class DeploymentRecordedElsewhere extends Error {}

/**
 * The deployment's journal: one item per chain, written only if absent (two runs at once: the
 * second's record fails, so it broadcasts nothing and resumes the first's transaction).
 */
class DeploymentJournal {
  readonly #table: Table;
  readonly #key: { pk: string; sk: string };

  constructor(table: Table, chain: string) {
    this.#table = table;
    this.#key = keys.delegateDeployment(chain, delegateAddress());
  }

  async load(): Promise<Broadcast | undefined> {
    const item = await getItem(this.#table, this.#key);
    return item ? { tx_hash: item.tx_hash as string, raw: item.raw as string } : undefined;
  }

  forSend(previous: Broadcast | undefined): SendJournal {
    return {
      ...(previous ? { previous } : {}),
      record: async (broadcast) => {
        try {
          await this.#table.doc.send(
            new PutCommand({
              TableName: this.#table.name,
              Item: { ...this.#key, ...broadcast, recorded_at: new Date().toISOString() },
              ConditionExpression: 'attribute_not_exists(pk)',
            }),
          );
        } catch (error) {
          if (isConditionalCheckFailed(error)) throw new DeploymentRecordedElsewhere('another run recorded a deployment transaction first');
          throw error;
        }
      },
    };
  }

  discard(recorded: Broadcast | undefined): Promise<void> {
    return discardBroadcastRecord(this.#table, this.#key, recorded);
  }
}

/** Direct client calls: their viem errors carry the RPC URL, so only a redacted reason leaves. */
async function chainCall<T>(chain: EvmChain, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw new DelegateDeploymentError(`the ${chain.code} RPC failed: ${describeChainError(error)}`);
  }
}
