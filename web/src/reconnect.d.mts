import type { ClientOptions } from "graphql-ws";

export declare const reconnect: Required<
  Pick<ClientOptions, "retryAttempts" | "shouldRetry" | "retryWait" | "keepAlive">
>;
