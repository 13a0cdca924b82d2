/* seed.c - a game's seed on the wire: end.seed as JSON, and the commit to it. */
#include "seed.h"

#include <stdio.h>
#include <string.h>

#include <openssl/evp.h>

#include "hex.h"

json_t *proto_seed_json(const eng_seed *seed) {
    if (seed->kind == ENG_SEED_CLIENT) return json_integer((json_int_t)seed->client);
    char text[ENG_SEED_TEXT_MAX];
    int len = eng_seed_format(seed, text, sizeof text);
    return len > 0 ? json_stringn_nocheck(text, (size_t)len) : NULL;
}

int proto_seed_from_json(const json_t *v, eng_seed *out) {
    eng_seed seed;
    if (json_is_integer(v)) {
        json_int_t n = json_integer_value(v);
        if (n < 0 || n > (json_int_t)UINT32_MAX) return -1;
        seed = eng_seed_client((uint32_t)n);
    } else if (json_is_string(v)) {
        /* Only the server form: a decimal string is not how a client seed
         * is written, and its commit would not match anyway. */
        size_t len = json_string_length(v);
        if (len != 2 * ENG_SEED_KEY_BYTES ||
            eng_seed_parse(&seed, json_string_value(v), (int)len) < 0)
            return -1;
    } else {
        return -1;
    }
    *out = seed;
    return 0;
}

int proto_commit(const char *salt, const eng_seed *seed, char out[PROTO_COMMIT_TEXT]) {
    char text[PROTO_SALT_TEXT + 1 + ENG_SEED_TEXT_MAX];
    char seed_text[ENG_SEED_TEXT_MAX];
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    out[0] = '\0';
    int seed_len = eng_seed_format(seed, seed_text, sizeof seed_text);
    int len = snprintf(text, sizeof text, "%s:%s", salt, seed_text);
    if (seed_len <= 0 || len < 0 || (size_t)len >= sizeof text ||
        !EVP_Digest(text, (size_t)len, md, &mdlen, EVP_sha256(), NULL) || mdlen != 32)
        return -1;
    proto_hex_encode(md, 32, out);
    return 0;
}
