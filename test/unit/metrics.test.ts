import type { Context } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ValidationError } from '../../shared/errors.ts';
import { httpHandler } from '../../shared/http/handler.ts';
import { jsonResponse } from '../../shared/http/response.ts';
import { setLogLevel } from '../../shared/logger.ts';
import { METRIC_NAMES, measureSigning, measureWithdrawal } from '../../shared/observability/metrics.ts';
import { captureJsonLines } from './support/capture-output.ts';

/** Metrics leave as CloudWatch EMF lines, flushed by httpHandler after each invocation. */
beforeAll(() => {
  process.env.POWERTOOLS_METRICS_NAMESPACE = 'PerpWalletTest';
  setLogLevel('silent');
});
afterAll(() => setLogLevel('info'));

const context = { functionName: 'Withdraw', awsRequestId: 'lambda-req' } as Context;
const event = { routeKey: 'POST /withdraw', rawPath: '/withdraw', headers: {}, requestContext: { requestId: 'gw-req-0001' } };

function emf(lines: Record<string, any>[]) {
  return lines
    .filter((line) => line._aws)
    .map((line) => ({
      metrics: line._aws.CloudWatchMetrics[0].Metrics.map((m: { Name: string }) => m.Name),
      namespace: line._aws.CloudWatchMetrics[0].Namespace,
      line,
    }));
}

describe('withdrawal metrics', () => {
  it.each([
    [{ replayed: false, response: { status: 200 } }, METRIC_NAMES.withdrawalSent],
    [{ replayed: true, response: { status: 200 } }, METRIC_NAMES.withdrawalReplayed],
    [{ replayed: true, response: { status: 502 } }, METRIC_NAMES.withdrawalReplayed],
    [{ replayed: false, response: { status: 502 } }, METRIC_NAMES.withdrawalFailed],
  ])('%o counts as %s, with the chain as dimension', async (outcome, name) => {
    const handler = httpHandler(async () => {
      await measureWithdrawal('ARB', async () => outcome);
      return jsonResponse(200, {});
    });
    const metrics = emf(await captureJsonLines(() => handler(event as never, context))).filter((m) => !m.metrics.includes('ColdStart'));
    expect(metrics).toHaveLength(1);
    expect(metrics[0]).toMatchObject({ metrics: [name], namespace: 'PerpWalletTest', line: { chain: 'ARB', [name]: 1 } });
  });

  it('counts a thrown error as failed, with its code as metadata', async () => {
    const handler = httpHandler(async () => {
      await measureWithdrawal('SOL', async () => {
        throw new ValidationError('no', 'INSUFFICIENT_FUNDS');
      });
      return jsonResponse(200, {});
    });
    const [metric] = emf(await captureJsonLines(() => handler(event as never, context))).filter((m) => !m.metrics.includes('ColdStart'));
    expect(metric).toMatchObject({ metrics: [METRIC_NAMES.withdrawalFailed], line: { chain: 'SOL', error_code: 'INSUFFICIENT_FUNDS', WithdrawalFailed: 1 } });
  });
});

describe('signing latency', () => {
  it('records the milliseconds of a successful operation, per route', async () => {
    const handler = httpHandler(async () => {
      await measureSigning('POST /v2/api/wallet/sign_data', () => new Promise((done) => setTimeout(done, 25)));
      return jsonResponse(200, {});
    });
    const [metric] = emf(await captureJsonLines(() => handler(event as never, context))).filter((m) => !m.metrics.includes('ColdStart'));
    expect(metric).toMatchObject({ metrics: [METRIC_NAMES.signingLatency], line: { route: 'POST /v2/api/wallet/sign_data' } });
    expect(metric!.line.SigningLatency).toBeGreaterThanOrEqual(20);
  });

  it('records nothing for a refused operation', async () => {
    const handler = httpHandler(async () => {
      await measureSigning('POST /v2/api/wallet/sign_data', async () => {
        throw new ValidationError('refused');
      });
      return jsonResponse(200, {});
    });
    const metrics = emf(await captureJsonLines(() => handler(event as never, context))).filter((m) => !m.metrics.includes('ColdStart'));
    expect(metrics).toEqual([]);
  });
});
