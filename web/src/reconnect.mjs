// How the console's subscriptions outlive a replica stopping (it closes them with 1012, Service
// Restart) or every replica being away for a while: the client connects again and subscribes
// again, without a page reload, and the server's catch-up read sends what changed meanwhile.
// Plain JavaScript, so that the tests' client (tests/clients/subscribe.mjs) runs these very
// options against replicas restarting one by one.

// A replica's clients all lose it at once; the others are ready at once: the first try comes
// soon, spread over a second so that they do not all land in the same instant; later tries
// back off, doubling up to half a minute.
async function retryWait(retries) {
  const ceiling = Math.min(30000, 1000 * 2 ** retries);
  const wait = retries === 0 ? 100 + Math.random() * 900 : (ceiling * (1 + Math.random())) / 2;
  await new Promise((resolve) => setTimeout(resolve, wait));
}

export const reconnect = {
  // Never give up: a console left open outlives any outage. (Closes that say the request
  // itself is wrong, 4400 and the like, still end the subscription.)
  retryAttempts: Infinity,
  // Failing to connect is worth another try too (a browser reports a refused or failed
  // handshake as an error, before the close event), not only a close.
  shouldRetry: () => true,
  retryWait,
  // A ping every 20 s keeps a quiet subscription open through proxies that close idle
  // connections (HAProxy's `timeout tunnel`, ingress-nginx's 60 s read timeout).
  keepAlive: 20000,
};
