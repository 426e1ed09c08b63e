import openapiTS, { astToString, COMMENT_HEADER, type OpenAPI3 } from 'openapi-typescript';

/**
 * The TypeScript types of one service's OpenAPI document (openapi-typescript), which the typed
 * client in shared/client/ feeds to openapi-fetch. `npm run openapi` writes them next to the
 * documents, and test/unit/openapi.test.ts checks both are current.
 */
export async function clientTypes(document: object): Promise<string> {
  const ast = await openapiTS(document as OpenAPI3, { silent: true, emptyObjectsUnknown: true });
  return `${COMMENT_HEADER}${astToString(ast)}`;
}
