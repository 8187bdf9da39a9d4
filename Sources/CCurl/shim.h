#ifndef PHOTOLEDGER_CCURL_SHIM_H
#define PHOTOLEDGER_CCURL_SHIM_H
#include <curl/curl.h>

/* Typed, non-variadic wrappers: Swift does not import curl_easy_setopt or curl_easy_getinfo.
   Each wrapper passes its argument with the exact C type the option expects. */

/// `curl_global_init(CURL_GLOBAL_ALL)`: call once per process, before any other libcurl function.
static inline CURLcode plcurl_global_init(void)
{
    return curl_global_init(CURL_GLOBAL_ALL);
}

/// Sets an option that takes a `long`.
static inline CURLcode plcurl_setopt_long(CURL *handle, CURLoption option, long value)
{
    return curl_easy_setopt(handle, option, value);
}

/// Sets an option that takes a `curl_off_t` (the `*_LARGE` options).
static inline CURLcode plcurl_setopt_off_t(CURL *handle, CURLoption option, curl_off_t value)
{
    return curl_easy_setopt(handle, option, value);
}

/// Sets an option that takes a C string (libcurl copies it).
static inline CURLcode plcurl_setopt_string(CURL *handle, CURLoption option, const char *value)
{
    return curl_easy_setopt(handle, option, value);
}

/// Sets an option that takes a pointer (user data, error buffer).
static inline CURLcode plcurl_setopt_pointer(CURL *handle, CURLoption option, void *value)
{
    return curl_easy_setopt(handle, option, value);
}

/// Sets an option that takes a header list.
static inline CURLcode plcurl_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value)
{
    return curl_easy_setopt(handle, option, value);
}

/// Sets `CURLOPT_WRITEFUNCTION` or `CURLOPT_HEADERFUNCTION`.
static inline CURLcode plcurl_setopt_write_function(CURL *handle, CURLoption option, curl_write_callback value)
{
    return curl_easy_setopt(handle, option, value);
}

/// Sets `CURLOPT_READFUNCTION`.
static inline CURLcode plcurl_setopt_read_function(CURL *handle, curl_read_callback value)
{
    return curl_easy_setopt(handle, CURLOPT_READFUNCTION, value);
}

/// Sets `CURLOPT_SEEKFUNCTION`.
static inline CURLcode plcurl_setopt_seek_function(CURL *handle, curl_seek_callback value)
{
    return curl_easy_setopt(handle, CURLOPT_SEEKFUNCTION, value);
}

/// Sets `CURLOPT_XFERINFOFUNCTION`.
static inline CURLcode plcurl_setopt_xferinfo_function(CURL *handle, curl_xferinfo_callback value)
{
    return curl_easy_setopt(handle, CURLOPT_XFERINFOFUNCTION, value);
}

/// Reads an information field of type `long`.
static inline CURLcode plcurl_getinfo_long(CURL *handle, CURLINFO info, long *value)
{
    return curl_easy_getinfo(handle, info, value);
}

/// Reads an information field of type `curl_off_t` (the `*_T` fields).
static inline CURLcode plcurl_getinfo_off_t(CURL *handle, CURLINFO info, curl_off_t *value)
{
    return curl_easy_getinfo(handle, info, value);
}

#endif
