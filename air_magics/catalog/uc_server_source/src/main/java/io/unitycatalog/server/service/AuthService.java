package io.unitycatalog.server.service;

import com.auth0.jwt.JWT;
import com.auth0.jwt.JWTVerifier;
import com.auth0.jwt.exceptions.JWTDecodeException;
import com.auth0.jwt.exceptions.JWTVerificationException;
import com.auth0.jwt.interfaces.DecodedJWT;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.linecorp.armeria.common.AggregatedHttpRequest;
import com.linecorp.armeria.common.Cookie;
import com.linecorp.armeria.common.HttpData;
import com.linecorp.armeria.common.HttpHeaderNames;
import com.linecorp.armeria.common.HttpRequest;
import com.linecorp.armeria.common.HttpResponse;
import com.linecorp.armeria.common.HttpStatus;
import com.linecorp.armeria.common.MediaType;
import com.linecorp.armeria.common.QueryParams;
import com.linecorp.armeria.common.ResponseHeaders;
import com.linecorp.armeria.common.ResponseHeadersBuilder;
import com.linecorp.armeria.common.annotation.Nullable;
import com.linecorp.armeria.server.ServiceRequestContext;
import com.linecorp.armeria.server.annotation.ExceptionHandler;
import com.linecorp.armeria.server.annotation.Param;
import com.linecorp.armeria.server.annotation.Post;
import com.linecorp.armeria.server.annotation.RequestConverter;
import com.linecorp.armeria.server.annotation.RequestConverterFunction;
import io.unitycatalog.control.model.AccessTokenType;
import io.unitycatalog.control.model.GrantType;
import io.unitycatalog.control.model.OAuthTokenExchangeForm;
import io.unitycatalog.control.model.OAuthTokenExchangeInfo;
import io.unitycatalog.control.model.TokenEndpointExtensionType;
import io.unitycatalog.control.model.TokenType;
import io.unitycatalog.control.model.User;
import io.unitycatalog.server.auth.annotation.AuthorizeExpression;
import io.unitycatalog.server.exception.ErrorCode;
import io.unitycatalog.server.exception.GlobalExceptionHandler;
import io.unitycatalog.server.exception.OAuthInvalidRequestException;
import io.unitycatalog.server.persist.Repositories;
import io.unitycatalog.server.persist.UserRepository;
import io.unitycatalog.server.security.JwtClaim;
import io.unitycatalog.server.security.SecurityContext;
import io.unitycatalog.server.utils.JwksOperations;
import io.unitycatalog.server.utils.ServerProperties;
import java.lang.reflect.ParameterizedType;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

@ExceptionHandler(GlobalExceptionHandler.class)
public class AuthService {

  private static final Logger LOGGER = LoggerFactory.getLogger(AuthService.class);
  private final UserRepository userRepository;

  private final SecurityContext securityContext;
  private final JwksOperations jwksOperations;
  private final ServerProperties serverProperties;

  private static final String EMPTY_RESPONSE = "{}";

  public AuthService(
      SecurityContext securityContext,
      ServerProperties serverProperties,
      Repositories repositories) {
    this.securityContext = securityContext;
    this.jwksOperations = new JwksOperations(securityContext);
    this.serverProperties = serverProperties;
    this.userRepository = repositories.getUserRepository();
  }

  /**
   * OAuth token exchange.
   *
   * <p>Performs an OAuth token exchange for an access-token. Specifically this endpoint accepts a
   * "token-exchange" grant type (urn:ietf:params:oauth:grant-type:token-exchange) and along with
   * either an identity-token (urn:ietf:params:oauth:token-type:id_token) or a access-token
   * (urn:ietf:params:oauth:token-type:access_token), validates the token signature using OIDC
   * discovery and JWKs, and then creates a new access-token.
   *
   * <ul>
   *   <li>grant_type: urn:ietf:params:oauth:grant-type:token-exchange
   *   <li>requested_token_type: urn:ietf:params:oauth:token-type:access_token or
   *       urn:ietf:params:oauth:token-type:id_token
   *   <li>subject_token_type: urn:ietf:params:oauth:token-type:access_token
   *   <li>subject_token: The incoming token (typically from an identity provider)
   *   <li>actor_token_type: Not supported
   *   <li>actor_token: Not supported
   *   <li>scope: Not supported
   * </ul>
   *
   * <p>The issuer of the incoming token must be in the configured allowlist
   * (server.allowed-issuers) and the token must contain a valid audience claim matching the
   * configured audiences (server.audiences). Audience entries support exact match or wildcard
   * patterns with {@code *} (same rules as server.allowed-issuers). A single value of {@code *}
   * disables audience validation. Both configurations are required when token exchange runs with
   * authorization enabled.
   *
   * @param ext Specifies whether the issued token should be set as a cookie.
   * @param form The OAuth 2.0 token exchange request form.
   * @return The token exchange response
   */
  @Post("/tokens")
  @com.linecorp.armeria.server.annotation.Blocking
  public HttpResponse grantToken(
      @Param("ext") Optional<TokenEndpointExtensionType> ext,
      @RequestConverter(ToOAuthTokenExchangeFormConverter.class) OAuthTokenExchangeForm form) {
    LOGGER.debug("Got token: {}", form);

    if (GrantType.TOKEN_EXCHANGE != form.getGrantType()) {
      throw new OAuthInvalidRequestException(
          ErrorCode.INVALID_ARGUMENT, "Unsupported grant type: " + form.getGrantType());
    }

    if (TokenType.ACCESS_TOKEN != form.getRequestedTokenType()) {
      throw new OAuthInvalidRequestException(
          ErrorCode.INVALID_ARGUMENT,
          "Unsupported requested token type: " + form.getRequestedTokenType());
    }

    if (form.getSubjectTokenType() == null) {
      throw new OAuthInvalidRequestException(
          ErrorCode.INVALID_ARGUMENT, "Subject token type is required but was not specified");
    }

    if (form.getActorTokenType() != null) {
      throw new OAuthInvalidRequestException(
          ErrorCode.INVALID_ARGUMENT, "Actor tokens not currently supported");
    }

    boolean authorizationEnabled = this.serverProperties.isAuthorizationEnabled();
    if (!authorizationEnabled) {
      throw new OAuthInvalidRequestException(
          ErrorCode.INVALID_ARGUMENT, "Authorization is disabled");
    }

    DecodedJWT decodedJWT;
    try {
      decodedJWT = JWT.decode(form.getSubjectToken());
    } catch (JWTDecodeException e) {
      LOGGER.error("Token rejected: malformed token", e);
      throw new OAuthInvalidRequestException(
          ErrorCode.UNAUTHENTICATED, "Invalid token: " + e.getMessage(), e);
    }

    String issuer = decodedJWT.getIssuer();

    // Validate issuer is in allowlist BEFORE fetching JWKS
    if (!serverProperties.getIssuerAllowlist().isAllowed(issuer)) {
      LOGGER.error("Token rejected: invalid issuer '{}'", issuer);
      throw new OAuthInvalidRequestException(ErrorCode.UNAUTHENTICATED, "Invalid issuer");
    }

    String keyId = decodedJWT.getKeyId();
    String alg = decodedJWT.getAlgorithm();

    LOGGER.debug("Validating token for issuer: {} and keyId: {}", issuer, keyId);

    try {
      JWTVerifier jwtVerifier = jwksOperations.verifierForIssuerAndKey(issuer, keyId, alg);
      decodedJWT = jwtVerifier.verify(decodedJWT);
    } catch (JWTVerificationException e) {
      LOGGER.error("Token rejected: verification failed", e);
      throw new OAuthInvalidRequestException(
          ErrorCode.UNAUTHENTICATED, "Token verification failed: " + e.getMessage(), e);
    }

    if (!serverProperties.isAudienceValidationDisabled()
        && !serverProperties.getAudienceAllowlist().isAnyAllowed(decodedJWT.getAudience())) {
      LOGGER.error("Token rejected: audience {} not in allowlist", decodedJWT.getAudience());
      throw new OAuthInvalidRequestException(ErrorCode.UNAUTHENTICATED, "Invalid audience");
    }

    verifyPrincipal(decodedJWT);

    LOGGER.debug("Validated. Creating access token.");

    Duration accessTokenTimeout = serverProperties.getAccessTokenTimeout();
    String accessToken = securityContext.createAccessToken(decodedJWT, accessTokenTimeout);

    OAuthTokenExchangeInfo tokenExchangeInfo =
        new OAuthTokenExchangeInfo()
            .accessToken(accessToken)
            .issuedTokenType(TokenType.ACCESS_TOKEN)
            .tokenType(AccessTokenType.BEARER)
            .expiresIn(accessTokenTimeout.getSeconds());

    // Set token as cookie if ext param is set to cookie
    ResponseHeadersBuilder responseHeaders = ResponseHeaders.builder(HttpStatus.OK);
    ext.ifPresent(
        e -> {
          if (e.equals(TokenEndpointExtensionType.COOKIE)) {
            Duration cookieTimeout = serverProperties.getEffectiveCookieTimeout();
            Cookie cookie =
                createCookie(AuthDecorator.UC_TOKEN_KEY, accessToken, "/", cookieTimeout);
            responseHeaders.add(HttpHeaderNames.SET_COOKIE, cookie.toSetCookieHeader());
          }
        });

    return HttpResponse.ofJson(responseHeaders.build(), tokenExchangeInfo);
  }

  @Post("/logout")
  @AuthorizeExpression("#principal != null")
  public HttpResponse logout(HttpRequest request) {
    return request.headers().cookies().stream()
        .filter(c -> c.name().equals(AuthDecorator.UC_TOKEN_KEY))
        .findFirst()
        .map(
            authorizationCookie -> {
              Cookie expiredCookie = createCookie(AuthDecorator.UC_TOKEN_KEY, "", "/", "PT0S");
              ResponseHeaders headers =
                  ResponseHeaders.builder()
                      .status(HttpStatus.OK)
                      .add(HttpHeaderNames.SET_COOKIE, expiredCookie.toSetCookieHeader())
                      .contentType(MediaType.JSON)
                      .build();
              // Armeria requires a non-empty response payload, so an empty JSON is sent
              return HttpResponse.of(headers, HttpData.ofUtf8(EMPTY_RESPONSE));
            })
        .orElse(HttpResponse.of(HttpStatus.OK, MediaType.JSON, EMPTY_RESPONSE));
  }

  private void verifyPrincipal(DecodedJWT decodedJWT) {
    String subject =
        decodedJWT
            .getClaims()
            .getOrDefault(JwtClaim.EMAIL.key(), decodedJWT.getClaim(JwtClaim.SUBJECT.key()))
            .asString();

    LOGGER.debug("Validating principal: {}", subject);

    if (subject.equals("admin")) {
      LOGGER.debug("admin always allowed");
      return;
    }

    try {
      User user = userRepository.getUserByEmail(subject);
      if (user != null && user.getState() == User.StateEnum.ENABLED) {
        LOGGER.debug("Principal {} is enabled", subject);
        return;
      }
    } catch (Exception e) {
      // IGNORE
    }

    throw new OAuthInvalidRequestException(
        ErrorCode.INVALID_ARGUMENT, "User not allowed: " + subject);
  }

  private Cookie createCookie(String key, String value, String path, Duration maxAge) {
    return Cookie.secureBuilder(key, value).path(path).maxAge(maxAge.getSeconds()).build();
  }

  private Cookie createCookie(String key, String value, String path, String maxAge) {
    return createCookie(key, value, path, Duration.parse(maxAge));
  }

  // NOTE:
  // When specifying `application/x-www-form-urlencoded` as the content type in the OpenAPI schema,
  // the OpenAPI Generator does not create request models from the schema.
  // Moreover, directly accessing parameters from the body without a model causes issues with
  // Armeria, particularly when the `ext` query parameter is included.
  //
  // To resolve this, instead of redefining a request model solely for Armeria's parameter
  // injection,
  // a `RequestConverterFunction` for `OAuthTokenExchangeRequest` is implemented here.
  // This approach ensures a single model is used across both the `controlApi` and `cli` projects,
  // preserving the principle of a single source of truth.
  //
  // SEE:
  // - https://armeria.dev/docs/server-annotated-service/#getting-a-query-parameter
  // - https://armeria.dev/docs/server-annotated-service/#injecting-a-parameter-as-an-enum-type
  private static class ToOAuthTokenExchangeFormConverter implements RequestConverterFunction {
    private static final ObjectMapper mapper = new ObjectMapper();

    @Override
    public Object convertRequest(
        ServiceRequestContext ctx,
        AggregatedHttpRequest request,
        Class<?> expectedResultType,
        @Nullable ParameterizedType expectedParameterizedResultType) {
      MediaType contentType = request.contentType();
      if (expectedResultType == OAuthTokenExchangeForm.class
          && contentType != null
          && contentType.belongsTo(MediaType.FORM_DATA)) {
        Map<String, String> form =
            QueryParams.fromQueryString(
                    request.content(contentType.charset(StandardCharsets.UTF_8)))
                .stream()
                .collect(Collectors.toMap(Map.Entry::getKey, Map.Entry::getValue));
        return mapper.convertValue(form, OAuthTokenExchangeForm.class);
      }
      return RequestConverterFunction.fallthrough();
    }
  }
}
