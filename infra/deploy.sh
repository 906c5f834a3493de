#!/usr/bin/env bash
# Deploy a packaged build (make package) with the AWS CLI: `make deploy STAGE=prod`.
#
#   1. an artifact bucket for the code zip (created once, private, encrypted),
#   2. aws cloudformation package  -> build/packaged.json (zip uploaded to S3), rewritten compact,
#   3. aws cloudformation deploy   -> stack $STACK (template through S3; change set; rolls back on failure),
#   4. first deploy without a custom domain: the CloudFront address only exists
#      once the stack does, so deploy once more with PublicBaseUrl set to it
#      (share links need it; later deploys keep the stored value),
#   5. print the stack outputs.
#
# Environment: STAGE (dev|prod), STACK (default docpub-$STAGE), BUILD_DIR (build),
# ARTIFACT_BUCKET (default docpub-artifacts-<account>-<region>), and optional stack
# parameters DOMAIN_NAME, CERTIFICATE_ARN, HOSTED_ZONE_ID, CONTENT_DOMAIN_NAME,
# CONTENT_CERTIFICATE_ARN, ALARM_TOPIC_ARN, BASE_URL, MAIL_FROM, MAIL_IDENTITY (SES),
# INDEX_PROJECTION (narrow|all), OIDC_ISSUER, OIDC_CLIENT_ID, OIDC_CLIENT_SECRET_PARAMETER, OIDC_NAME (SSO).
# AWS credentials and region come from the usual AWS CLI configuration.
set -euo pipefail

STAGE="${STAGE:-dev}"
STACK="${STACK:-docpub-${STAGE}}"
BUILD_DIR="${BUILD_DIR:-build}"
AWS="${AWS_CLI:-aws}"

die() { echo "deploy: $*" >&2; exit 1; }

command -v "$AWS" >/dev/null 2>&1 || die "the AWS CLI ('aws') is not installed; see docs/deploy.md"
[ -f "$BUILD_DIR/sam.json" ] || die "$BUILD_DIR/sam.json is missing; run 'make package STAGE=$STAGE' first"

REGION="${AWS_REGION:-${AWS_DEFAULT_REGION:-$("$AWS" configure get region || true)}}"
[ -n "$REGION" ] || die "no AWS region: set AWS_REGION"
export AWS_REGION="$REGION"
ACCOUNT="$("$AWS" sts get-caller-identity --query Account --output text)" \
  || die "no working AWS credentials (aws sts get-caller-identity failed)"
ARTIFACT_BUCKET="${ARTIFACT_BUCKET:-docpub-artifacts-${ACCOUNT}-${REGION}}"

echo "deploy: stack $STACK, stage $STAGE, account $ACCOUNT, region $REGION"

if ! "$AWS" s3api head-bucket --bucket "$ARTIFACT_BUCKET" >/dev/null 2>&1; then
  echo "deploy: creating artifact bucket $ARTIFACT_BUCKET"
  if [ "$REGION" = "us-east-1" ]; then
    "$AWS" s3api create-bucket --bucket "$ARTIFACT_BUCKET" >/dev/null
  else
    "$AWS" s3api create-bucket --bucket "$ARTIFACT_BUCKET" \
      --create-bucket-configuration "LocationConstraint=$REGION" >/dev/null
  fi
  "$AWS" s3api put-public-access-block --bucket "$ARTIFACT_BUCKET" --public-access-block-configuration \
    BlockPublicAcls=true,IgnorePublicAcls=true,BlockPublicPolicy=true,RestrictPublicBuckets=true
fi

"$AWS" cloudformation package --template-file "$BUILD_DIR/sam.json" \
  --s3-bucket "$ARTIFACT_BUCKET" --s3-prefix "$STACK" \
  --output-template-file "$BUILD_DIR/packaged.json" --use-json >/dev/null
# The AWS CLI writes the packaged template indented (1.36 MB, over CloudFormation's 1 MB);
# rewrite it without whitespace (0.40 MB), refusing here if it is still too big.
"${PYTHON:-python3}" -m infra.package --compact "$BUILD_DIR/packaged.json"

stack_output() {
  "$AWS" cloudformation describe-stacks --stack-name "$STACK" \
    --query "Stacks[0].Outputs[?OutputKey=='$1'].OutputValue" --output text 2>/dev/null || true
}

params=("Stage=$STAGE")
[ -n "${DOMAIN_NAME:-}" ] && params+=("DomainName=$DOMAIN_NAME")
[ -n "${CERTIFICATE_ARN:-}" ] && params+=("CertificateArn=$CERTIFICATE_ARN")
[ -n "${CONTENT_DOMAIN_NAME:-}" ] && params+=("ContentDomainName=$CONTENT_DOMAIN_NAME")
[ -n "${CONTENT_CERTIFICATE_ARN:-}" ] && params+=("ContentCertificateArn=$CONTENT_CERTIFICATE_ARN")
[ -n "${HOSTED_ZONE_ID:-}" ] && params+=("HostedZoneId=$HOSTED_ZONE_ID")
[ -n "${ALARM_TOPIC_ARN:-}" ] && params+=("AlarmTopicArn=$ALARM_TOPIC_ARN")
[ -n "${BASE_URL:-}" ] && params+=("PublicBaseUrl=$BASE_URL")
[ -n "${MAIL_FROM:-}" ] && params+=("MailFromAddress=$MAIL_FROM")
[ -n "${MAIL_IDENTITY:-}" ] && params+=("MailIdentity=$MAIL_IDENTITY")
[ -n "${UPGRADE_URL:-}" ] && params+=("UpgradeUrl=$UPGRADE_URL")
[ -n "${OPERATOR_EMAILS:-}" ] && params+=("OperatorEmails=$OPERATOR_EMAILS")
# Signed versions (docs/provenance.md): rotate by deploying with a new KMS key's ARN.
[ -n "${SIGNING_KEY_ARN:-}" ] && params+=("SigningKeyArn=$SIGNING_KEY_ARN")
# Single sign-on (docs/sso.md): the secret stays in the SecureString OIDC_CLIENT_SECRET_PARAMETER names.
[ -n "${OIDC_ISSUER:-}" ] && params+=("OidcIssuer=$OIDC_ISSUER")
[ -n "${OIDC_CLIENT_ID:-}" ] && params+=("OidcClientId=$OIDC_CLIENT_ID")
[ -n "${OIDC_CLIENT_SECRET_PARAMETER:-}" ] && params+=("OidcClientSecretParameter=$OIDC_CLIENT_SECRET_PARAMETER")
[ -n "${OIDC_CLIENT_SECRET_KEY_ARN:-}" ] && params+=("OidcClientSecretKeyArn=$OIDC_CLIENT_SECRET_KEY_ARN")
[ -n "${OIDC_NAME:-}" ] && params+=("OidcName=$OIDC_NAME")

# GSI projections (issue 23): DynamoDB cannot change an existing index's projection, so a
# stack made before the narrow projections keeps ALL (IndexProjection=all) unless told
# otherwise (INDEX_PROJECTION); a new stack, or one that has the parameter, keeps its value.
if [ -z "${INDEX_PROJECTION:-}" ]; then
  status="$("$AWS" cloudformation describe-stacks --stack-name "$STACK" \
    --query "Stacks[0].StackStatus" --output text 2>/dev/null || true)"
  if [ -n "$status" ] && [ "$status" != "None" ] && [ "$status" != "REVIEW_IN_PROGRESS" ]; then
    stored="$("$AWS" cloudformation describe-stacks --stack-name "$STACK" \
      --query "Stacks[0].Parameters[?ParameterKey=='IndexProjection'].ParameterValue" --output text)"
    if [ -z "$stored" ] || [ "$stored" = "None" ]; then
      echo "deploy: $STACK predates narrow index projections: keeping ALL (IndexProjection=all)"
      INDEX_PROJECTION=all
    fi
  fi
fi
[ -n "${INDEX_PROJECTION:-}" ] && params+=("IndexProjection=$INDEX_PROJECTION")

deploy() {
  # Over 51,200 bytes a template must reach CloudFormation through S3 (--s3-bucket).
  "$AWS" cloudformation deploy --template-file "$BUILD_DIR/packaged.json" --stack-name "$STACK" \
    --s3-bucket "$ARTIFACT_BUCKET" --s3-prefix "$STACK" \
    --capabilities CAPABILITY_IAM CAPABILITY_AUTO_EXPAND --no-fail-on-empty-changeset \
    --tags app=docpub "stage=$STAGE" --parameter-overrides "$@"
}

deploy "${params[@]}"

# A stack without a custom domain and without a base URL answers share links
# with a placeholder host: point it at its own CloudFront address.
if [ "$(stack_output BaseUrl)" = "https://set-PublicBaseUrl.invalid" ]; then
  cloudfront_url="$(stack_output CloudFrontUrl)"
  [ -n "$cloudfront_url" ] || die "stack has no CloudFrontUrl output"
  echo "deploy: setting PublicBaseUrl=$cloudfront_url"
  deploy "${params[@]}" "PublicBaseUrl=$cloudfront_url"
fi

"$AWS" cloudformation describe-stacks --stack-name "$STACK" \
  --query "Stacks[0].Outputs[].[OutputKey,OutputValue]" --output text
