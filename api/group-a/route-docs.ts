/** How group A's routes are listed in the OpenAPI document. */
export const security = [{ apiKey: [] }];
export const tags = ['Group A'];

/** The service names request fields as the shared request type does; group A spells some in snake_case. */
export const GROUP_A_PARAMS: Record<string, string> = {
  imageUrl: 'image_url',
  maxTokens: 'max_tokens',
  editImages: 'input_images',
  editMask: 'mask_url',
  video: 'id',
};
