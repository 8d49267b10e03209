// A plugin's operations by name, as the console's own are read: persisted (the server trusts
// them from the plugin's console folder), their answers in the console's one Apollo cache, where
// the server's embedded answer already is on a page it rendered.
import type { OperationVariables } from "@apollo/client";
import { useMutation, useQuery, useSubscription } from "@apollo/client/react";
import { document } from "../documents";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Data = any;

export function useOperation<T = Data>(
  name: string,
  variables?: OperationVariables,
  options?: { errorPolicy?: "none" | "all" | "ignore"; pollInterval?: number; skip?: boolean },
) {
  return useQuery<T>(document(name), { variables, ...options });
}

export function useMutationOf<T = Data>(name: string) {
  return useMutation<T>(document(name));
}

export function useSubscriptionOf<T = Data>(name: string, variables?: OperationVariables, skip?: boolean) {
  return useSubscription<T>(document(name), { variables, skip });
}
