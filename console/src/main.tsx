import { createRoot } from 'react-dom/client';
import { App } from './App';
import './styles.css';

// No StrictMode: GraphiQL 3 opens its tabs twice under it (a second, empty "<untitled>" tab).
createRoot(document.getElementById('root')!).render(<App />);
