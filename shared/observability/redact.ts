import { BaseError } from 'viem';

/**
 * What may reach a log line. Hosted RPC URLs carry API keys in their path or query, and viem's
 * `Error.message` / `.details` repeat the URL and the JSON-RPC request body; so strings keep only
 * a URL's origin, and errors keep their name and short message (issue 7, item 3).
 */

// scheme://[userinfo@]host[:port][/path][?query][#fragment], up to a quote, space or bracket.
const URL_PATTERN = /\b([a-z][a-z0-9+.-]{1,15}):\/\/([^\s/?#"'<>@]*@)?([^\s/?#"'<>]+)([^\s"'<>()[\]{}]*)/gi;
const MAX_MESSAGE = 500;

/** Keeps `scheme://host[:port]` of every URL; userinfo goes, and a path or query becomes `/…`. */
export function redactText(text: string): string {
  return text.replace(
    URL_PATTERN,
    (_url, scheme: string, _userinfo: string | undefined, host: string, rest: string) => `${scheme}://${host}${rest && rest !== '/' ? '/…' : ''}`,
  );
}

export interface LoggedError {
  readonly name: string;
  readonly message: string;
  readonly code?: string;
  readonly cause?: LoggedError;
}

/**
 * The loggable form of a thrown value: viem errors by `shortMessage` (never `.message` or
 * `.details`), other errors by a redacted, shortened message; an error `code` if it has one, and
 * the first two causes the same way.
 */
export function describeError(error: unknown, depth = 0): LoggedError {
  if (!(error instanceof Error)) return { name: typeof error, message: redactText(String(error)).slice(0, MAX_MESSAGE) };
  const message = error instanceof BaseError ? error.shortMessage : error.message;
  const code = (error as { code?: unknown }).code;
  const cause = depth < 2 && error.cause !== undefined && error.cause !== error ? describeError(error.cause, depth + 1) : undefined;
  return {
    name: error.name,
    message: redactText(message).slice(0, MAX_MESSAGE),
    ...(typeof code === 'string' || typeof code === 'number' ? { code: String(code) } : {}),
    ...(cause ? { cause } : {}),
  };
}

/** JSON.stringify replacer for log lines: every string redacted, every error described. */
export function redactingReplacer(_key: string, value: unknown): unknown {
  if (typeof value === 'string') return redactText(value);
  if (value instanceof Error) return describeError(value);
  return value;
}
