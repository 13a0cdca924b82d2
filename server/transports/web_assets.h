/* web_assets.h - the web client's files, compiled into the server (the table is
 * generated from clients/web/ by cmake/embed.cmake). */
#ifndef RACE2048_WEB_ASSETS_H
#define RACE2048_WEB_ASSETS_H

#include <stddef.h>

typedef struct web_asset {
    const char *path;         /* as requested: "/", "/static/app.js", ... */
    const char *content_type; /* with charset for text */
    const unsigned char *data;
    size_t len;
    const char *etag; /* quoted, from the file's SHA-1 */
} web_asset;

extern const web_asset web_assets[];
extern const size_t web_nassets;

#endif
