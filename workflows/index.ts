export { generation } from './generation';
export { reconcile } from './reconcile';
