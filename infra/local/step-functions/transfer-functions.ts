import { join, resolve } from 'node:path';
import { ed25519 } from '@noble/curves/ed25519.js';
import { getAddressDecoder } from '@solana/kit';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { TRANSFER_STEP_FUNCTIONS, type TransferStepFunction, type TransferStepKind } from '../../../functions/transfer-steps.ts';
import { TRANSFER_SETTLE_LAMBDA_TIMEOUT_SECONDS, TRANSFER_STEP_LAMBDA_TIMEOUT_SECONDS } from '../../transfer-definition.ts';
import { loadLocalLambda } from '../api-gateway.ts';
import { DurableState } from '../venues/durable-state.ts';
import { FunctionNotFoundError, type FunctionResolver, type LocalLambda } from './runner.ts';

/**
 * The transfer step Lambdas of functions/transfer-steps.ts as the local Step Functions calls them:
 * in this process, with the same environment as the API handlers, each invocation in its own
 * Lambda context. A function is found by its id (`TransferDepositStep`) or by an ARN ending in it;
 * its module is imported at its first invocation, so a missing module fails only that invocation.
 */
export function transferStepResolver(functions: readonly TransferStepFunction[] = TRANSFER_STEP_FUNCTIONS): FunctionResolver {
  const byId = new Map(functions.map((fn) => [fn.id, fn]));
  const loaded = new Map<string, Promise<LocalLambda>>();
  return async (functionName) => {
    // `name`, `arn:aws:lambda:<region>:<account>:function:<name>[:qualifier]`
    const id = functionName.startsWith('arn:') ? (functionName.split(':')[6] ?? '') : functionName;
    const fn = byId.get(id);
    if (!fn) throw new FunctionNotFoundError(functionName);
    let lambda = loaded.get(id);
    if (!lambda) {
      const timeoutMs = (fn.kind === 'settle' ? TRANSFER_SETTLE_LAMBDA_TIMEOUT_SECONDS : TRANSFER_STEP_LAMBDA_TIMEOUT_SECONDS) * 1000;
      lambda = loadLocalLambda<unknown, unknown>(fn.entry, fn.id, timeoutMs);
      lambda.catch(() => loaded.delete(id)); // a failed import is tried again at the next invocation
      loaded.set(id, lambda);
    }
    return lambda;
  };
}

/** TRANSFER_STEP_FUNCTIONS (env): each step kind's local function name. */
export function localStepFunctionNames(functions: readonly TransferStepFunction[] = TRANSFER_STEP_FUNCTIONS): Record<TransferStepKind, string> {
  return Object.fromEntries(functions.map((fn) => [fn.kind, fn.id])) as Record<TransferStepKind, string>;
}

interface FeeRecipients {
  readonly version: 1;
  readonly evm: { readonly private_key: `0x${string}` };
  /** 32-byte ed25519 secret, hex. */
  readonly sol: { readonly secret: string };
}

/**
 * PLATFORM_FEE for the sandbox (a sandbox choice, README "Transfers"): 10 bps, no fixed part, paid
 * to an EVM and a Solana address the sandbox generates once and keeps (with their keys) in
 * DATA_DIR/platform-fee.json, so fees collected survive restarts and can be counted.
 */
export async function sandboxPlatformFee(dataDir: string): Promise<string> {
  const store = await DurableState.open<FeeRecipients>(join(resolve(dataDir), 'platform-fee.json'), () => ({
    version: 1,
    evm: { private_key: generatePrivateKey() },
    sol: { secret: Buffer.from(ed25519.utils.randomSecretKey()).toString('hex') },
  }));
  const { evm, sol } = store.read();
  const solAddress = getAddressDecoder().decode(ed25519.getPublicKey(Uint8Array.from(Buffer.from(sol.secret, 'hex'))));
  return JSON.stringify({ bps: 10, fixed: '0', recipients: { EVM: privateKeyToAccount(evm.private_key).address, SOL: solAddress } });
}
