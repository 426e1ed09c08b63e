import type { RequestContext } from './evaluate.ts';

/**
 * What AWS authorises for one DynamoDB request (the JSON protocol's operation and body), as the
 * DynamoDB developer guide's "Using IAM policy conditions for fine-grained access control" and
 * "Actions, resources, and condition keys for Amazon DynamoDB" describe it:
 * - an item operation is `dynamodb:<operation>` on the table's ARN (`…/index/<name>` for a Query
 *   of an index), with `dynamodb:LeadingKeys` the partition key values it touches;
 * - a batch is authorised item by item, each as the batch action (BatchGetItem, BatchWriteItem)
 *   with that item's partition key, on that item's table;
 * - a transaction has no action of its own: each element is authorised as PutItem, UpdateItem,
 *   DeleteItem, ConditionCheckItem or GetItem, with `dynamodb:EnclosingOperation` naming the
 *   transaction;
 * - anything else (DescribeTable, Scan, ListTables, CreateTable, …) is `dynamodb:<operation>` on
 *   the table (or `*` without one), with no leading keys.
 * The table has `pk` as its partition key and no secondary index (shared/db/partitions.ts); the
 * partition key's name is a parameter all the same.
 */
export interface AccessRequest {
  readonly action: string;
  readonly resource: string;
  readonly context: RequestContext;
}

type AttributeValue = { readonly S?: string; readonly N?: string; readonly B?: string };
type Key = Readonly<Record<string, AttributeValue>>;

interface Body {
  readonly TableName?: string;
  readonly IndexName?: string;
  readonly Key?: Key;
  readonly Item?: Key;
  readonly KeyConditionExpression?: string;
  readonly ExpressionAttributeNames?: Readonly<Record<string, string>>;
  readonly ExpressionAttributeValues?: Readonly<Record<string, AttributeValue>>;
  readonly RequestItems?: Readonly<Record<string, unknown>>;
  readonly TransactItems?: readonly { readonly [kind: string]: Body | undefined }[];
}

const ITEM_OPERATIONS = new Set(['GetItem', 'PutItem', 'UpdateItem', 'DeleteItem']);
const TRANSACT_WRITE_ACTIONS: Readonly<Record<string, string>> = {
  Put: 'PutItem',
  Update: 'UpdateItem',
  Delete: 'DeleteItem',
  ConditionCheck: 'ConditionCheckItem',
};

export function dynamodbAccessRequests(operation: string, body: Body, tableArn: (table: string) => string, partitionKey = 'pk'): AccessRequest[] {
  const action = `dynamodb:${operation}`;
  const leading = (key: Key | undefined): string[] => {
    const value = key?.[partitionKey];
    const text = value?.S ?? value?.N ?? value?.B;
    return text === undefined ? [] : [text];
  };
  const withKeys = (keys: string[], extra: Record<string, string> = {}): RequestContext => (keys.length ? { 'dynamodb:LeadingKeys': keys, ...extra } : extra);
  if (ITEM_OPERATIONS.has(operation))
    return [{ action, resource: tableArn(body.TableName ?? ''), context: withKeys(leading(operation === 'PutItem' ? body.Item : body.Key)) }];
  switch (operation) {
    case 'Query': {
      const resource = body.IndexName ? `${tableArn(body.TableName ?? '')}/index/${body.IndexName}` : tableArn(body.TableName ?? '');
      return [{ action, resource, context: withKeys(queriedPartition(body, partitionKey)) }];
    }
    case 'BatchGetItem':
      return Object.entries(body.RequestItems ?? {}).flatMap(([table, request]) =>
        ((request as { Keys?: Key[] }).Keys ?? []).map((key) => ({ action, resource: tableArn(table), context: withKeys(leading(key)) })),
      );
    case 'BatchWriteItem':
      return Object.entries(body.RequestItems ?? {}).flatMap(([table, requests]) =>
        (requests as { PutRequest?: { Item: Key }; DeleteRequest?: { Key: Key } }[]).map((request) => ({
          action,
          resource: tableArn(table),
          context: withKeys(leading(request.PutRequest?.Item ?? request.DeleteRequest?.Key)),
        })),
      );
    case 'TransactWriteItems':
    case 'TransactGetItems':
      return (body.TransactItems ?? []).flatMap((element) =>
        Object.entries(element).flatMap(([kind, inner]) => {
          if (!inner) return [];
          const elementAction = operation === 'TransactGetItems' ? 'dynamodb:GetItem' : `dynamodb:${TRANSACT_WRITE_ACTIONS[kind] ?? kind}`;
          const key = kind === 'Put' ? inner.Item : inner.Key;
          return {
            action: elementAction,
            resource: tableArn(inner.TableName ?? ''),
            context: withKeys(leading(key), { 'dynamodb:EnclosingOperation': operation }),
          };
        }),
      );
    default:
      return [{ action, resource: body.TableName ? tableArn(body.TableName) : '*', context: {} }];
  }
}

/**
 * The partition key value a Query names: its key condition is `<pk> = :value` (DynamoDB requires
 * an equality on the partition key), `<pk>` the attribute's name or an ExpressionAttributeNames
 * placeholder for it. None found: no leading keys, as AWS would see a request it then refuses.
 */
function queriedPartition(body: Body, partitionKey: string): string[] {
  const expression = body.KeyConditionExpression ?? '';
  for (const match of expression.matchAll(/([#\w]+)\s*=\s*(:\w+)/g)) {
    const [, name, placeholder] = match as unknown as [string, string, string];
    const attribute = name.startsWith('#') ? body.ExpressionAttributeNames?.[name] : name;
    if (attribute !== partitionKey) continue;
    const value = body.ExpressionAttributeValues?.[placeholder];
    const text = value?.S ?? value?.N ?? value?.B;
    return text === undefined ? [] : [text];
  }
  return [];
}
