import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import middy from '@middy/core';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import { createLocalJWKSet, createRemoteJWKSet, jwtVerify } from 'jose';

/**
 * The floor bundle of bench/bundle-size.ts: the least a Lambda here can be that does one
 * authenticated DynamoDB read with our libraries: middy, jose (a bearer JWT against a remote or
 * local JWKS, as shared/auth/jwt.ts verifies), the DynamoDB document client (one GetItem).
 * Never deployed; built and imported by the bench only.
 */
const doc = DynamoDBDocumentClient.from(new DynamoDBClient({}), { marshallOptions: { removeUndefinedValues: true } });
const keys = process.env.JWKS_URL ? createRemoteJWKSet(new URL(process.env.JWKS_URL)) : createLocalJWKSet({ keys: [] });

export const handler = middy(async (event: APIGatewayProxyEvent) => {
  const token = event.headers.authorization?.replace(/^Bearer /i, '') ?? '';
  const { payload } = await jwtVerify(token, keys, { issuer: process.env.ISSUER, audience: process.env.AUDIENCE });
  const { Item } = await doc.send(new GetCommand({ TableName: process.env.TABLE_NAME, Key: { pk: `USER#${payload.sub}`, sk: 'ACCOUNT' } }));
  return { statusCode: Item ? 200 : 404, headers: { 'content-type': 'application/json' }, body: JSON.stringify(Item ?? { error: 'not found' }) };
});
