import { Logger } from '@aws-lambda-powertools/logger';
import { redactingReplacer } from './observability/redact.ts';
import { currentServiceName } from './observability/service-name.ts';

/**
 * Structured JSON logs through Powertools Logger: one line each, with the service name, and,
 * inside `httpHandler`, the Lambda request id, cold start and our `request_id`. Every line passes
 * the redacting replacer: URLs keep only their origin, errors keep name and short message, so an
 * RPC key or a request body cannot reach the log. Request bodies and headers are never logged.
 *
 * LOG_LEVEL (debug, info, warn, error, silent; default info) applies to every level.
 */
export type LogFields = Record<string, unknown>;

const LEVELS = ['DEBUG', 'INFO', 'WARN', 'ERROR', 'SILENT'] as const;
type LevelName = (typeof LEVELS)[number];

export function logLevelFromEnv(value = process.env.LOG_LEVEL): LevelName {
  const level = (value || 'info').toUpperCase();
  return (LEVELS as readonly string[]).includes(level) ? (level as LevelName) : 'INFO';
}

const loggers = new Map<string, Logger>();

/** The Powertools logger of the current service (one per process in Lambda). */
export function serviceLogger(serviceName = currentServiceName()): Logger {
  let found = loggers.get(serviceName);
  if (!found) {
    found = new Logger({ serviceName, logLevel: logLevelFromEnv(), jsonReplacerFn: redactingReplacer });
    loggers.set(serviceName, found);
  }
  return found;
}

/** Changes the level of every logger made so far and of those made later (tests, benches). */
export function setLogLevel(level: string) {
  process.env.LOG_LEVEL = level;
  for (const each of loggers.values()) each.setLogLevel(logLevelFromEnv(level));
}

export const logger = {
  debug: (message: string, fields: LogFields = {}) => serviceLogger().debug(message, fields),
  info: (message: string, fields: LogFields = {}) => serviceLogger().info(message, fields),
  warn: (message: string, fields: LogFields = {}) => serviceLogger().warn(message, fields),
  error: (message: string, fields: LogFields = {}) => serviceLogger().error(message, fields),
};
