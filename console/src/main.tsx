import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { Provider } from 'urql';
import { Router } from 'wouter';
import { createApiClient } from './api';
import { App } from './App';
import './console.css';

const client = createApiClient();

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <Provider value={client}>
      <Router base="/console">
        <App />
      </Router>
    </Provider>
  </StrictMode>,
);
