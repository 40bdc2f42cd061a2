export { generation } from './generation/workflow';
export { reconcile } from './generation/reconcile';
export { webhookDelivery } from './webhooks/delivery';
export { batch } from './batches/workflow';
