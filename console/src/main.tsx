import { StrictMode, useCallback, useState } from 'react';
import { createRoot } from 'react-dom/client';
import { Provider } from 'urql';
import { Router } from 'wouter';
import { closeSubscriptions, createApiClient } from './api';
import { App } from './App';
import './console.css';

/**
 * A fresh GraphQL client, and so an empty cache, for each credential: after signing out or in, nothing read
 * with the previous credential is shown, not even for a moment.
 */
function Root() {
  const [session, setSession] = useState(() => ({ client: createApiClient(), generation: 0 }));
  const renew = useCallback(() => {
    closeSubscriptions();
    setSession((current) => ({ client: createApiClient(), generation: current.generation + 1 }));
  }, []);
  return (
    <Provider value={session.client}>
      <Router base="/console">
        <App generation={session.generation} onCredentialChange={renew} />
      </Router>
    </Provider>
  );
}

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <Root />
  </StrictMode>,
);
