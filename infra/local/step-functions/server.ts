import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { join, resolve } from 'node:path';
import type { StateMachineDefinition } from 'aws-local-stepfunctions';
import { type LocalResponse, registerLocalEndpoint } from '../../../shared/deps/local-endpoints.ts';
import { readTransferMachine } from '../../transfer-definition.ts';
import { listenPreferring } from '../listen-preferring.ts';
import { DurableState } from '../venues/durable-state.ts';
import { loadLocalDefinition } from './definition.ts';
import { type ExecutionOutcome, type ExecutionStatus, type FunctionResolver, type LocalRun, type RunCounts, runLocalExecution } from './runner.ts';

/**
 * The sandbox's Step Functions: one state machine (statemachines/transfer.asl.json by default)
 * behind the AWS JSON 1.0 protocol that @aws-sdk/client-sfn speaks (POST /, `X-Amz-Target:
 * AWSStepFunctions.<Operation>`), so the `POST /transfer` Lambda's SFNClient only changes its
 * endpoint (SFN_ENDPOINT). Operations: StartExecution, DescribeExecution, StopExecution,
 * ListExecutions, with AWS's error shapes (`__type`) so the SDK raises its own exception classes.
 *
 * Standard-workflow semantics kept: StartExecution with the name of a RUNNING execution and the same
 * input returns that execution; once it has closed, or with another input, ExecutionAlreadyExists
 * (the AWS Step Functions API's own semantics). Every execution is on disk (DATA_DIR/stepfunctions/executions.json)
 * before StartExecution answers and again when it closes. An execution still RUNNING on disk when
 * the sandbox starts was cut by a kill: `redriveRunning()` runs it again with the same input (the
 * step Lambdas are idempotent) within what is left of the machine's timeout.
 *
 * Sandbox-only reads for tests and the bench (not AWS API): `GET /executions` and
 * `GET /executions/{name}` return the executions with `counts` (transitions = StateEntered +
 * StateRetried, lambda_invocations); DescribeExecution's JSON also carries them as `sandbox`.
 */
export interface LocalStepFunctionsOptions {
  readonly dataDir: string;
  readonly host?: string;
  readonly functions: FunctionResolver;
  /** Default: statemachines/transfer.asl.json. */
  readonly definition?: unknown;
  /** The state machine's name in its ARN (default `transfer`). */
  readonly name?: string;
  /** How long each Wait state takes locally, ms (default 200; the runtime: SANDBOX_STEP_WAIT_MS, else its tick, infra/local/sandbox-tick.ts). */
  readonly waitMs?: number;
  /** The pause before each retry locally, ms (default 100). */
  readonly retryMs?: number;
  /**
   * Asked before an in-process client's request runs (infra/local/iam/: the calling function's
   * IAM): an answer refuses it. The endpoint is served in process for that (registerLocalEndpoint):
   * the functions' SFN client hands its request over in the invocation's own context.
   */
  readonly authorize?: (operation: string, body: unknown) => LocalResponse | undefined;
}

export interface ExecutionView {
  readonly executionArn: string;
  readonly name: string;
  readonly status: ExecutionStatus;
  readonly startDate: string;
  readonly stopDate?: string;
  readonly input: string;
  readonly output?: string;
  readonly error?: string;
  readonly cause?: string;
  /** Summed over every local run of the execution (a re-drive adds a run; a run cut by a kill is not counted). */
  readonly counts: RunCounts;
  readonly runs: number;
}

export interface LocalStepFunctions {
  readonly endpoint: string;
  readonly stateMachineArn: string;
  /** Runs again every execution recorded RUNNING by an earlier process; call once the sandbox is up. Returns their names. */
  redriveRunning(): Promise<string[]>;
  execution(name: string): ExecutionView | undefined;
  /** Resolves once the execution has closed (tests and the bench). */
  closed(name: string): Promise<ExecutionView>;
  /** Ends the runs without recording them closed: they stay RUNNING on disk and are re-driven next start. */
  stop(): Promise<void>;
}

interface ExecutionRecord {
  readonly name: string;
  readonly input: string;
  status: ExecutionStatus;
  readonly start_ms: number;
  stop_ms?: number;
  output?: string;
  error?: string;
  cause?: string;
  counts: RunCounts;
  runs: number;
}

interface StepFunctionsState {
  readonly version: 1;
  port: number | null;
  executions: Record<string, ExecutionRecord>;
}

const REGION = 'us-east-1';
const ACCOUNT = '000000000000';
const BODY_LIMIT = 1024 * 1024;
/** AWS's limit on an execution's input (bytes). */
const MAX_INPUT_BYTES = 262_144;
/** Execution names: 1-80 characters without whitespace, brackets, wildcards or `" # % \ ^ | ~ ` $ & , ; : /` nor control characters. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: the control characters are what the name may not contain (AWS's rule)
const NAME_PATTERN = /^[^\s<>{}[\]?*"#%\\^|~`$&,;:/\u0000-\u001f\u007f-\u009f]{1,80}$/;
const ZERO_COUNTS: RunCounts = { transitions: 0, state_entered: 0, state_retried: 0, lambda_invocations: 0, refused_invocations: 0 };

class SfnError extends Error {
  readonly type: string;
  readonly status: number;
  constructor(type: string, message: string, status = 400) {
    super(message);
    this.type = type;
    this.status = status;
  }
}

export async function startLocalStepFunctions(options: LocalStepFunctionsOptions): Promise<LocalStepFunctions> {
  const definition: StateMachineDefinition = loadLocalDefinition(options.definition ?? readTransferMachine());
  const machineName = options.name ?? 'transfer';
  const stateMachineArn = `arn:aws:states:${REGION}:${ACCOUNT}:stateMachine:${machineName}`;
  const executionArn = (name: string) => `arn:aws:states:${REGION}:${ACCOUNT}:execution:${machineName}:${name}`;
  const executionPrefix = executionArn('');
  const store = await DurableState.open<StepFunctionsState>(join(resolve(options.dataDir), 'stepfunctions', 'executions.json'), () => ({
    version: 1,
    port: null,
    executions: {},
  }));
  const live = new Map<string, LocalRun>();
  const waiters = new Map<string, ((view: ExecutionView) => void)[]>();
  let stopping = false;

  const view = (record: ExecutionRecord): ExecutionView => {
    const run = live.get(record.name);
    return {
      executionArn: executionArn(record.name),
      name: record.name,
      status: record.status,
      startDate: new Date(record.start_ms).toISOString(),
      ...(record.stop_ms === undefined ? {} : { stopDate: new Date(record.stop_ms).toISOString() }),
      input: record.input,
      ...(record.output === undefined ? {} : { output: record.output }),
      ...(record.error === undefined ? {} : { error: record.error }),
      ...(record.cause === undefined ? {} : { cause: record.cause }),
      counts: run && record.status === 'RUNNING' ? addCounts(record.counts, run.counts()) : record.counts,
      runs: record.runs,
    };
  };

  const close = async (name: string, outcome: ExecutionOutcome, counts: RunCounts) => {
    const record = await store.transact((draft) => {
      const entry = draft.executions[name]!;
      if (entry.status !== 'RUNNING') return entry; // stopped already (StopExecution recorded ABORTED)
      entry.status = outcome.status;
      entry.stop_ms = Date.now();
      entry.counts = addCounts(entry.counts, counts);
      if (outcome.output !== undefined) entry.output = outcome.output;
      if (outcome.error !== undefined) entry.error = outcome.error;
      if (outcome.cause !== undefined) entry.cause = outcome.cause;
      return entry;
    });
    live.delete(name);
    for (const notify of waiters.get(name) ?? []) notify(view(record));
    waiters.delete(name);
  };

  /** Starts a local run of a RUNNING record; `timeoutSeconds` is what is left of the machine's timeout. */
  const begin = (record: ExecutionRecord) => {
    const elapsed = Math.floor((Date.now() - record.start_ms) / 1000);
    const left = definition.TimeoutSeconds === undefined ? undefined : definition.TimeoutSeconds - elapsed;
    if (left !== undefined && left <= 0) {
      void close(
        record.name,
        { status: 'TIMED_OUT', error: 'States.Timeout', cause: "The execution ran longer than the machine's TimeoutSeconds" },
        ZERO_COUNTS,
      );
      return;
    }
    const run = runLocalExecution({
      definition,
      input: JSON.parse(record.input),
      name: record.name,
      executionArn: executionArn(record.name),
      functions: options.functions,
      ...(left === undefined ? {} : { timeoutSeconds: left }),
      ...(options.waitMs === undefined ? {} : { waitMs: options.waitMs }),
      ...(options.retryMs === undefined ? {} : { retryMs: options.retryMs }),
    });
    live.set(record.name, run);
    void run.outcome.then((outcome) => {
      if (stopping) return; // shutdown: stays RUNNING on disk, re-driven next start
      return close(record.name, outcome, run.counts());
    });
  };

  const recordOf = (arn: unknown): ExecutionRecord => {
    if (typeof arn !== 'string' || !arn.startsWith('arn:')) throw new SfnError('InvalidArn', `Invalid Arn: '${String(arn)}'`);
    const record = arn.startsWith(executionPrefix) ? store.read().executions[arn.slice(executionPrefix.length)] : undefined;
    if (!record) throw new SfnError('ExecutionDoesNotExist', `Execution Does Not Exist: '${arn}'`);
    return record;
  };

  const operations: Record<string, (body: Record<string, unknown>) => Promise<unknown>> = {
    StartExecution: async (body) => {
      if (body.stateMachineArn !== stateMachineArn) {
        if (typeof body.stateMachineArn !== 'string' || !body.stateMachineArn.startsWith('arn:'))
          throw new SfnError('InvalidArn', `Invalid Arn: '${String(body.stateMachineArn)}'`);
        throw new SfnError('StateMachineDoesNotExist', `State Machine Does Not Exist: '${body.stateMachineArn}'`);
      }
      const name = body.name === undefined ? randomUUID() : body.name;
      if (typeof name !== 'string' || !NAME_PATTERN.test(name)) throw new SfnError('InvalidName', `Invalid Name: '${String(name)}'`);
      const input = body.input === undefined ? '{}' : body.input;
      if (typeof input !== 'string' || Buffer.byteLength(input) > MAX_INPUT_BYTES || !isJson(input))
        throw new SfnError('InvalidExecutionInput', 'Invalid State Machine Execution Input: the input must be JSON of at most 262144 bytes');
      const { record, created } = await store.transact((draft) => {
        const existing = draft.executions[name];
        if (existing) return { record: existing, created: false };
        const entry: ExecutionRecord = { name, input, status: 'RUNNING', start_ms: Date.now(), counts: ZERO_COUNTS, runs: 1 };
        draft.executions[name] = entry;
        return { record: entry, created: true };
      });
      // Standard: idempotent only while RUNNING and with the same input.
      if (!created && (record.status !== 'RUNNING' || record.input !== input))
        throw new SfnError('ExecutionAlreadyExists', `Execution Already Exists: '${executionArn(name)}'`);
      if (created) begin(record);
      return { executionArn: executionArn(name), startDate: record.start_ms / 1000 };
    },
    DescribeExecution: async (body) => {
      const record = recordOf(body.executionArn);
      const shown = view(record);
      return {
        executionArn: shown.executionArn,
        stateMachineArn,
        name: record.name,
        status: record.status,
        startDate: record.start_ms / 1000,
        ...(record.stop_ms === undefined ? {} : { stopDate: record.stop_ms / 1000 }),
        input: record.input,
        inputDetails: { included: true },
        ...(record.output === undefined ? {} : { output: record.output, outputDetails: { included: true } }),
        ...(record.error === undefined ? {} : { error: record.error }),
        ...(record.cause === undefined ? {} : { cause: record.cause }),
        redriveCount: 0,
        sandbox: { counts: shown.counts, runs: record.runs },
      };
    },
    StopExecution: async (body) => {
      const record = recordOf(body.executionArn);
      if (record.status !== 'RUNNING') return { stopDate: (record.stop_ms ?? Date.now()) / 1000 };
      const stopped = await store.transact((draft) => {
        const entry = draft.executions[record.name]!;
        if (entry.status !== 'RUNNING') return entry;
        entry.status = 'ABORTED';
        entry.stop_ms = Date.now();
        entry.counts = addCounts(entry.counts, live.get(record.name)?.counts() ?? ZERO_COUNTS);
        if (typeof body.error === 'string') entry.error = body.error;
        if (typeof body.cause === 'string') entry.cause = body.cause;
        return entry;
      });
      const run = live.get(record.name);
      live.delete(record.name);
      run?.stop(); // the handler already running (if any) finishes in the background
      for (const notify of waiters.get(record.name) ?? []) notify(view(stopped));
      waiters.delete(record.name);
      return { stopDate: stopped.stop_ms! / 1000 };
    },
    ListExecutions: async (body) => {
      if (body.stateMachineArn !== stateMachineArn)
        throw new SfnError('StateMachineDoesNotExist', `State Machine Does Not Exist: '${String(body.stateMachineArn)}'`);
      const all = Object.values(store.read().executions)
        .filter((record) => body.statusFilter === undefined || record.status === body.statusFilter)
        .sort((a, b) => b.start_ms - a.start_ms);
      const from = typeof body.nextToken === 'string' ? Number(body.nextToken) : 0;
      const size = typeof body.maxResults === 'number' && body.maxResults > 0 ? Math.min(body.maxResults, 1000) : 100;
      const page = all.slice(from, from + size);
      return {
        executions: page.map((record) => ({
          executionArn: executionArn(record.name),
          stateMachineArn,
          name: record.name,
          status: record.status,
          startDate: record.start_ms / 1000,
          ...(record.stop_ms === undefined ? {} : { stopDate: record.stop_ms / 1000 }),
        })),
        ...(from + size < all.length ? { nextToken: String(from + size) } : {}),
      };
    },
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) sendError(res, error instanceof SfnError ? error : new SfnError('InternalFailure', 'Internal failure', 500));
      else res.end();
    });
  });

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of req) {
      size += (chunk as Buffer).length;
      if (size > BODY_LIMIT) throw new SfnError('ValidationException', 'The request body is too large', 413);
      chunks.push(chunk as Buffer);
    }
    const path = (req.url ?? '/').split('?')[0]!;
    if (req.method === 'GET' && (path === '/executions' || path.startsWith('/executions/'))) {
      const name = decodeURIComponent(path.slice('/executions/'.length));
      const records = store.read().executions;
      const body = path === '/executions' ? { executions: Object.values(records).map(view) } : records[name] ? view(records[name]) : undefined;
      res.writeHead(body ? 200 : 404, { 'content-type': 'application/json' }).end(JSON.stringify(body ?? { message: `no execution ${name}` }));
      return;
    }
    if (path !== '/') throw new SfnError('UnknownOperationException', `Unknown operation ${String(req.headers['x-amz-target'] ?? '')}`);
    const answer = await answerJson(req.method ?? 'GET', String(req.headers['x-amz-target'] ?? ''), Buffer.concat(chunks));
    res.writeHead(answer.status, { ...answer.headers, 'x-amzn-requestid': randomUUID() }).end(answer.body);
  };

  /**
   * One request of the JSON protocol (`X-Amz-Target: AWSStepFunctions.<operation>`), for the HTTP
   * server and the in-process endpoint alike; `authorize` (the caller's IAM) is asked once the
   * request is known to be well formed, as AWS authorises after validating the request's shape.
   */
  const answerJson = async (method: string, target: string, text: Buffer): Promise<LocalResponse> => {
    const errorResponse = (error: SfnError): LocalResponse => ({
      status: error.status,
      headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-errortype': error.type },
      body: Buffer.from(JSON.stringify({ __type: `com.amazonaws.sfn#${error.type}`, message: error.message })),
    });
    const name = target.startsWith('AWSStepFunctions.') ? target.slice('AWSStepFunctions.'.length) : '';
    const operation = operations[name];
    if (method !== 'POST' || !operation) return errorResponse(new SfnError('UnknownOperationException', `Unknown operation ${target}`));
    let body: unknown;
    try {
      body = JSON.parse(text.toString('utf8') || '{}');
    } catch {
      return errorResponse(new SfnError('SerializationException', 'The request body is not JSON'));
    }
    if (typeof body !== 'object' || body === null || Array.isArray(body))
      return errorResponse(new SfnError('SerializationException', 'The request body is not a JSON object'));
    const refused = options.authorize?.(name, body);
    if (refused) return refused;
    try {
      const result = await operation(body as Record<string, unknown>);
      return { status: 200, headers: { 'content-type': 'application/x-amz-json-1.0' }, body: Buffer.from(JSON.stringify(result)) };
    } catch (error) {
      return errorResponse(error instanceof SfnError ? error : new SfnError('InternalFailure', 'Internal failure', 500));
    }
  };

  const host = options.host ?? '127.0.0.1';
  const port = await listenPreferring(server, store.read().port, host);
  if (store.read().port !== port) {
    await store.transact((draft) => {
      draft.port = port;
    });
  }
  const urlHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
  const endpoint = `http://${urlHost}:${port}`;
  // The same operations for this process's SDK clients, without the loopback socket.
  const unregister = registerLocalEndpoint(endpoint, (request) => answerJson(request.method, request.headers['x-amz-target'] ?? '', request.body));

  return {
    endpoint,
    stateMachineArn,
    redriveRunning: async () => {
      const running = Object.values(store.read().executions).filter((record) => record.status === 'RUNNING' && !live.has(record.name));
      for (const record of running) {
        const again = await store.transact((draft) => {
          draft.executions[record.name]!.runs += 1;
          return draft.executions[record.name]!;
        });
        begin(again);
      }
      return running.map((record) => record.name);
    },
    execution: (name) => {
      const record = store.read().executions[name];
      return record ? view(record) : undefined;
    },
    closed: (name) => {
      const record = store.read().executions[name];
      if (!record) return Promise.reject(new Error(`no execution ${name}`));
      if (record.status !== 'RUNNING') return Promise.resolve(view(record));
      return new Promise((done) => waiters.set(name, [...(waiters.get(name) ?? []), done]));
    },
    stop: async () => {
      unregister();
      stopping = true;
      for (const run of live.values()) run.stop();
      live.clear();
      await new Promise<void>((done) => {
        server.close(() => done());
        server.closeAllConnections();
      });
    },
  };
}

function sendError(res: ServerResponse, error: SfnError) {
  res
    .writeHead(error.status, { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-errortype': error.type, 'x-amzn-requestid': randomUUID() })
    .end(JSON.stringify({ __type: `com.amazonaws.sfn#${error.type}`, message: error.message }));
}

function addCounts(a: RunCounts, b: RunCounts): RunCounts {
  return {
    transitions: a.transitions + b.transitions,
    state_entered: a.state_entered + b.state_entered,
    state_retried: a.state_retried + b.state_retried,
    lambda_invocations: a.lambda_invocations + b.lambda_invocations,
    refused_invocations: a.refused_invocations + b.refused_invocations,
  };
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}
