export { generation } from './generation';
export { reconcile } from './reconcile';
export { webhookDelivery } from './webhook-delivery';
