export { generation } from './generation';
