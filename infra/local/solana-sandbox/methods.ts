import type { Address } from '@solana/kit';
import bs58 from 'bs58';
import { FailedTransactionMetadata } from 'litesvm';
import { MAX_PROCESSING_AGE } from './constants.ts';
import { encodeAccount, innerInstructionsJson, signatureStatus, transactionJson } from './encoding.ts';
import { describeFailure, type TxErrorJson } from './errors.ts';
import { transactionFee } from './fees.ts';
import { accountEncoding, configAt, dataSlice, integerParam, invalidParam, invalidParams, pubkeyParam, signatureParam } from './params.ts';
import { LITESVM_VERSION } from './persistence.ts';
import { isTokenProgram, readMint, readTokenAccount, uiTokenAmount } from './spl.ts';
import type { SandboxChain } from './state.ts';
import { JsonRpcError, type RpcMethod } from './transport.ts';
import type { AccountState } from './types.ts';
import { decodeWireParam, parseMessage, parseWireTransaction, signaturesVerify } from './wire.ts';

/** The JSON-RPC methods the sandbox answers, by name, over one chain. */

export function rpcMethods(chain: SandboxChain): Map<string, RpcMethod> {
  const context = (config: Record<string, unknown> = {}) => {
    const minContextSlot = config.minContextSlot;
    if (typeof minContextSlot === 'number' && minContextSlot > chain.slot) {
      throw new JsonRpcError(-32016, 'Minimum context slot has not been reached', { contextSlot: chain.slot });
    }
    return { slot: chain.slot };
  };
  const withContext = (config: Record<string, unknown>, value: unknown) => ({ context: context(config), value });

  const mintDecimals = (mint: string) => {
    const account = chain.account(mint);
    return account ? (readMint(account)?.decimals ?? null) : null;
  };

  const accountFor = (key: Address, config: Record<string, unknown>) => {
    const account = chain.account(key);
    return account ? encodeAccount(account, accountEncoding(config.encoding, 'binary'), mintDecimals, dataSlice(config)) : null;
  };

  const methods: Record<string, RpcMethod> = {
    getHealth: () => 'ok',
    getVersion: () => ({ 'solana-core': `litesvm-${LITESVM_VERSION}` }),
    getGenesisHash: () => chain.genesisHash,
    getSlot: (params) => context(configAt(params, 0)).slot,
    getBlockHeight: (params) => {
      context(configAt(params, 0));
      return chain.blockHeight;
    },
    getTransactionCount: (params) => {
      context(configAt(params, 0));
      return chain.transactionCount;
    },
    getEpochInfo: (params) => {
      context(configAt(params, 0));
      const { epoch, slotIndex, slotsInEpoch } = chain.epochOf(chain.slot);
      return { absoluteSlot: chain.slot, blockHeight: chain.blockHeight, epoch, slotIndex, slotsInEpoch, transactionCount: chain.transactionCount };
    },
    getEpochSchedule: () => {
      const schedule = chain.svm.getEpochSchedule();
      return {
        firstNormalEpoch: Number(schedule.firstNormalEpoch),
        firstNormalSlot: Number(schedule.firstNormalSlot),
        leaderScheduleSlotOffset: Number(schedule.leaderScheduleSlotOffset),
        slotsPerEpoch: Number(schedule.slotsPerEpoch),
        warmup: schedule.warmup,
      };
    },
    getLatestBlockhash: (params) => withContext(configAt(params, 0), chain.latestBlockhash()),
    isBlockhashValid: (params) => {
      const blockhash = pubkeyParam(params[0]);
      return withContext(configAt(params, 1), chain.isBlockhashValid(blockhash));
    },
    getBalance: (params) => {
      const key = pubkeyParam(params[0]);
      return withContext(configAt(params, 1), chain.account(key)?.lamports ?? 0n);
    },
    getAccountInfo: (params) => {
      const key = pubkeyParam(params[0]);
      const config = configAt(params, 1);
      return withContext(config, accountFor(key, config));
    },
    getMultipleAccounts: (params) => {
      if (!Array.isArray(params[0])) throw invalidParams('invalid type: expected an array of base-58 encoded public keys');
      if (params[0].length > 100) throw invalidParams('Too many inputs provided; max 100');
      const keys = params[0].map(pubkeyParam);
      const config = configAt(params, 1);
      return withContext(
        config,
        keys.map((key) => accountFor(key, config)),
      );
    },
    getMinimumBalanceForRentExemption: (params) => {
      const length = integerParam(params[0] ?? 0, 'data length');
      if (length > 10 * 1024 * 1024) throw invalidParams(`data length ${length} exceeds the maximum account size`);
      context(configAt(params, 1));
      return chain.svm.minimumBalanceForRentExemption(BigInt(length));
    },
    getTokenAccountBalance: (params) => {
      const key = pubkeyParam(params[0]);
      const config = configAt(params, 1);
      const account = chain.account(key);
      if (!account) throw invalidParam('could not find account');
      const token = readTokenAccount(account);
      if (!token) throw invalidParam('not a Token account');
      const decimals = mintDecimals(token.mint);
      if (decimals === null) throw invalidParam('could not find mint');
      return withContext(config, uiTokenAmount(token.amount, decimals));
    },
    getTokenAccountsByOwner: (params) => {
      const owner = pubkeyParam(params[0]);
      const filter = params[1];
      if (typeof filter !== 'object' || filter === null) throw invalidParams('invalid type: expected a filter object with "mint" or "programId"');
      const { mint, programId } = filter as Record<string, unknown>;
      let program: string;
      let mintKey: string | undefined;
      if (mint !== undefined) {
        mintKey = pubkeyParam(mint);
        const mintAccount = chain.account(mintKey);
        if (!mintAccount || !isTokenProgram(mintAccount.owner)) throw invalidParam('could not find mint');
        program = mintAccount.owner;
      } else if (programId !== undefined) {
        program = pubkeyParam(programId);
        if (!isTokenProgram(program)) throw invalidParam('unrecognized Token program id');
      } else {
        throw invalidParams('filter must have "mint" or "programId"');
      }
      const config = configAt(params, 2);
      const encoding = accountEncoding(config.encoding, 'binary');
      const slice = dataSlice(config);
      const value = chain.svm
        .getProgramAccounts(program as Address)
        .map((found) => ({
          pubkey: found.address as string,
          account: {
            lamports: found.lamports as bigint,
            owner: found.programAddress as string,
            data: new Uint8Array(found.data),
            executable: found.executable,
          },
        }))
        .filter(({ account }) => {
          const token = readTokenAccount(account);
          return token !== null && token.owner === owner && (mintKey === undefined || token.mint === mintKey);
        })
        .map(({ pubkey, account }) => ({ account: encodeAccount(account, encoding, mintDecimals, slice), pubkey }));
      return withContext(config, value);
    },
    getFeeForMessage: (params) => {
      if (typeof params[0] !== 'string') throw invalidParams('invalid type: expected a base-64 encoded message string');
      const message = parseMessage(new Uint8Array(Buffer.from(params[0], 'base64')));
      return withContext(configAt(params, 1), chain.isLifetimeValid(message) ? transactionFee(message) : null);
    },
    getRecentPrioritizationFees: (params) => {
      const keys = Array.isArray(params[0]) ? params[0].map(pubkeyParam) : [];
      if (keys.length > 128) throw invalidParams('Too many inputs provided; max 128');
      return [...chain.records.values()]
        .filter((record) => record.slot > chain.slot - MAX_PROCESSING_AGE && (keys.length === 0 || keys.some((key) => record.writableKeys.includes(key))))
        .map((record) => ({ prioritizationFee: BigInt(record.computeUnitPrice), slot: record.slot }));
    },
    getSignatureStatuses: (params) => {
      if (!Array.isArray(params[0])) throw invalidParams('invalid type: expected an array of base-58 encoded signatures');
      if (params[0].length > 256) throw invalidParams('Too many inputs provided; max 256');
      const signatures = params[0].map(signatureParam);
      const value = signatures.map((signature) => {
        const record = chain.records.get(signature);
        return record ? signatureStatus(record) : null;
      });
      return { context: context(), value };
    },
    getTransaction: (params) => {
      const signature = signatureParam(params[0]);
      const config = typeof params[1] === 'string' ? { encoding: params[1] } : configAt(params, 1);
      const encoding = config.encoding ?? 'json';
      if (encoding !== 'json' && encoding !== 'jsonParsed' && encoding !== 'base64' && encoding !== 'base58' && encoding !== 'binary') {
        throw invalidParams(`unknown variant \`${String(encoding)}\`, expected one of \`binary\`, \`base64\`, \`base58\`, \`json\`, \`jsonParsed\``);
      }
      if (config.commitment === 'processed') throw invalidParams('Method does not support commitment below `confirmed`');
      const record = chain.records.get(signature);
      if (!record) return null;
      const maxVersion = config.maxSupportedTransactionVersion;
      if (record.version === 0 && (typeof maxVersion !== 'number' || maxVersion < 0)) {
        throw new JsonRpcError(
          -32015,
          'Transaction version (0) is not supported by the requesting client. Please try the request again with the following configuration parameter: "maxSupportedTransactionVersion": 0',
        );
      }
      const parsed = encoding === 'jsonParsed';
      const meta = {
        computeUnitsConsumed: record.computeUnitsConsumed,
        err: record.err,
        fee: BigInt(record.fee),
        innerInstructions: innerInstructionsJson(record, parsed),
        ...(parsed ? {} : { loadedAddresses: record.loadedAddresses }),
        logMessages: record.logs,
        postBalances: record.postBalances.map(BigInt),
        postTokenBalances: record.postTokenBalances,
        preBalances: record.preBalances.map(BigInt),
        preTokenBalances: record.preTokenBalances,
        ...(record.returnData ? { returnData: record.returnData } : {}),
        rewards: [],
        status: record.err === null ? { Ok: null } : { Err: record.err },
      };
      return {
        blockTime: record.blockTime,
        meta,
        slot: record.slot,
        transaction: transactionJson(record, encoding as string),
        ...(typeof maxVersion === 'number' ? { version: record.version } : {}),
      };
    },
    sendTransaction: (params) => {
      const config = configAt(params, 1);
      const tx = parseWireTransaction(decodeWireParam(params[0], config.encoding));
      context(config);
      return chain.submit(tx, config.skipPreflight === true);
    },
    simulateTransaction: (params) => {
      const config = configAt(params, 1);
      const tx = parseWireTransaction(decodeWireParam(params[0], config.encoding));
      const replace = config.replaceRecentBlockhash === true;
      if (replace && config.sigVerify === true) throw invalidParams('sigVerify may not be used with replaceRecentBlockhash');
      if (config.sigVerify === true && !signaturesVerify(tx)) throw new JsonRpcError(-32003, 'Transaction signature verification failure');
      const requested = config.accounts as { addresses?: unknown; encoding?: unknown } | undefined;
      const addresses = Array.isArray(requested?.addresses) ? requested.addresses.map(pubkeyParam) : undefined;
      const encoding = accountEncoding(requested?.encoding, 'base64');
      const base = {
        accounts: null as unknown,
        err: null as TxErrorJson | null,
        innerInstructions: null as unknown,
        logs: [] as readonly string[],
        replacementBlockhash: replace ? chain.latestBlockhash() : null,
        returnData: null as unknown,
        unitsConsumed: 0,
      };
      if (!replace && !chain.isLifetimeValid(tx.message)) return withContext(config, { ...base, err: 'BlockhashNotFound' });
      const simulated = chain.svm.simulateTransaction(tx.kit);
      if (simulated instanceof FailedTransactionMetadata) {
        const meta = simulated.meta();
        return withContext(config, {
          ...base,
          err: describeFailure(simulated.err()).json,
          logs: meta.logs(),
          unitsConsumed: Number(meta.computeUnitsConsumed()),
        });
      }
      const meta = simulated.meta();
      const post = new Map(simulated.postAccounts().map((found) => [found.address as string, found]));
      const stateAfter = (key: string): AccountState | null => {
        const found = post.get(key);
        if (!found) return chain.account(key);
        return found.lamports === 0n && found.data.length === 0
          ? null
          : { lamports: found.lamports, owner: found.programAddress, data: new Uint8Array(found.data), executable: found.executable };
      };
      const keys = chain.accountKeys(tx.message)?.keys ?? [...tx.message.staticKeys];
      const returnData = meta.returnData();
      return withContext(config, {
        ...base,
        accounts:
          addresses?.map((key) => {
            const account = stateAfter(key);
            return account ? encodeAccount(account, encoding, mintDecimals) : null;
          }) ?? null,
        innerInstructions:
          config.innerInstructions === true
            ? meta
                .innerInstructions()
                .map((inner, index) => ({
                  index,
                  instructions: inner.map((ix) => {
                    const compiled = ix.instruction();
                    return {
                      accounts: [...compiled.accounts()].map((i) => keys[i]),
                      data: bs58.encode(compiled.data()),
                      programId: keys[compiled.programIdIndex()],
                      stackHeight: ix.stackHeight(),
                    };
                  }),
                }))
                .filter((entry) => entry.instructions.length > 0)
            : null,
        logs: meta.logs(),
        returnData: returnData.data().length
          ? { data: [Buffer.from(returnData.data()).toString('base64'), 'base64'], programId: bs58.encode(returnData.programId()) }
          : null,
        unitsConsumed: Number(meta.computeUnitsConsumed()),
      });
    },
  };
  return new Map(Object.entries(methods));
}
