export const BASE = "https://accounts.test";
